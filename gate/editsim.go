package gate

import (
	"regexp"
	"strings"
	"sync"
	"unicode"
)

// Claude Code does not apply an Edit's strings verbatim. Its FileEditTool
// (src/tools/FileEditTool/utils.ts) first normalises the input, then finds
// the text to replace:
//
//   - new_string loses trailing whitespace on every line, except in
//     Markdown files (.md, .mdx);
//   - an old_string not in the file verbatim is "desanitised" (<fnr> becomes
//     <function_results>, <n> <name>, ...), and new_string gets the same
//     replacements, when that makes it match;
//   - an old_string still not in the file is looked up with curly quotes
//     (‘ ’ “ ”) read as straight ones, on both sides (findActualString): the
//     text replaced is the file's own, and new_string is given the file's
//     curly style (preserveQuoteStyle: a straight quote becomes an opening
//     curly quote at the start or after whitespace, ( [ { or a dash, else a
//     closing one; a single quote between two letters is an apostrophe);
//   - an empty new_string deletes the old text together with the newline
//     after it, when old_string does not end with one.
//
// The write guard replays the same steps, so that an edit Claude Code
// applies is judged on the document that lands: an old_string with curly
// quotes must not read as "not matched" and slip through unjudged.

const (
	leftSingleCurly  = '\u2018'
	rightSingleCurly = '\u2019'
	leftDoubleCurly  = '\u201C'
	rightDoubleCurly = '\u201D'
)

var quoteNormalizer = strings.NewReplacer(
	string(leftSingleCurly), "'", string(rightSingleCurly), "'",
	string(leftDoubleCurly), `"`, string(rightDoubleCurly), `"`,
)

// desanitizations undo what the model's output channel rewrites, in
// Claude Code's order.
var desanitizations = [][2]string{
	{"<fnr>", "<function_results>"},
	{"<n>", "<name>"},
	{"</n>", "</name>"},
	{"<o>", "<output>"},
	{"</o>", "</output>"},
	{"<e>", "<error>"},
	{"</e>", "</error>"},
	{"<s>", "<system>"},
	{"</s>", "</system>"},
	{"<r>", "<result>"},
	{"</r>", "</result>"},
	{"< META_START >", "<META_START>"},
	{"< META_END >", "<META_END>"},
	{"< EOT >", "<EOT>"},
	{"< META >", "<META>"},
	{"< SOS >", "<SOS>"},
	{"\n\nH:", "\n\nHuman:"},
	{"\n\nA:", "\n\nAssistant:"},
}

var markdownFile = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(?i)\.(md|mdx)$`) })

// normalizeEdit is Claude Code's input normalisation of one edit against
// the file's content.
func normalizeEdit(path, content string, e Edit) Edit {
	if !markdownFile().MatchString(path) {
		e.New = stripTrailingWhitespace(e.New)
	}
	if strings.Contains(content, e.Old) {
		return e
	}
	old, newStr := e.Old, e.New
	var applied [][2]string
	for _, d := range desanitizations {
		if r := strings.ReplaceAll(old, d[0], d[1]); r != old {
			old = r
			applied = append(applied, d)
		}
	}
	if !strings.Contains(content, old) {
		return e
	}
	for _, d := range applied {
		newStr = strings.ReplaceAll(newStr, d[0], d[1])
	}
	e.Old, e.New = old, newStr
	return e
}

var lineBreak = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`\r\n|\n|\r`) })

// stripTrailingWhitespace removes trailing white space (JavaScript's \s)
// from every line, keeping the line breaks.
func stripTrailingWhitespace(s string) string {
	var b strings.Builder
	last := 0
	for _, m := range lineBreak().FindAllStringIndex(s, -1) {
		b.WriteString(strings.TrimRightFunc(s[last:m[0]], isJSSpace))
		b.WriteString(s[m[0]:m[1]])
		last = m[1]
	}
	b.WriteString(strings.TrimRightFunc(s[last:], isJSSpace))
	return b.String()
}

// isJSSpace is JavaScript's \s (WhiteSpace and LineTerminator of
// ECMAScript): Go's unicode.IsSpace also counts U+0085, which JavaScript
// does not, and lacks the BOM.
func isJSSpace(r rune) bool {
	switch r {
	case '\t', '\n', '\v', '\f', '\r', ' ', '\u00A0', '\u1680', '\u2028', '\u2029', '\u202F', '\u205F', '\u3000', '\uFEFF':
		return true
	}
	return r >= '\u2000' && r <= '\u200A'
}

// findActualString returns the text of content that old_string stands for:
// itself when present, else the first span that matches once curly quotes
// on both sides read as straight ones.
func findActualString(content, search string) (string, bool) {
	if strings.Contains(content, search) {
		return search, true
	}
	normSearch := quoteNormalizer.Replace(search)
	normContent := quoteNormalizer.Replace(content)
	i := strings.Index(normContent, normSearch)
	if i < 0 {
		return "", false
	}
	// Each curly quote (3 bytes) became one straight byte: map the byte
	// offset back through the runes, which normalisation keeps one for one.
	start := len([]rune(normContent[:i]))
	n := len([]rune(search))
	runes := []rune(content)
	if start+n > len(runes) {
		return "", false
	}
	return string(runes[start : start+n]), true
}

// preserveQuoteStyle gives newStr the file's curly quotes when old_string
// matched only through quote normalisation.
func preserveQuoteStyle(old, actual, newStr string) string {
	if old == actual {
		return newStr
	}
	hasDouble := strings.ContainsRune(actual, leftDoubleCurly) || strings.ContainsRune(actual, rightDoubleCurly)
	hasSingle := strings.ContainsRune(actual, leftSingleCurly) || strings.ContainsRune(actual, rightSingleCurly)
	if hasDouble {
		newStr = applyCurlyDouble(newStr)
	}
	if hasSingle {
		newStr = applyCurlySingle(newStr)
	}
	return newStr
}

func openingContext(chars []rune, i int) bool {
	if i == 0 {
		return true
	}
	switch chars[i-1] {
	case ' ', '\t', '\n', '\r', '(', '[', '{', '\u2014', '\u2013':
		return true
	}
	return false
}

func applyCurlyDouble(s string) string {
	chars := []rune(s)
	out := make([]rune, len(chars))
	for i, c := range chars {
		switch {
		case c != '"':
			out[i] = c
		case openingContext(chars, i):
			out[i] = leftDoubleCurly
		default:
			out[i] = rightDoubleCurly
		}
	}
	return string(out)
}

func applyCurlySingle(s string) string {
	chars := []rune(s)
	out := make([]rune, len(chars))
	for i, c := range chars {
		switch {
		case c != '\'':
			out[i] = c
		case i > 0 && i < len(chars)-1 && unicode.IsLetter(chars[i-1]) && unicode.IsLetter(chars[i+1]):
			out[i] = rightSingleCurly // an apostrophe
		case openingContext(chars, i):
			out[i] = leftSingleCurly
		default:
			out[i] = rightSingleCurly
		}
	}
	return string(out)
}

// applyEditToFile replaces old by newStr (the first or every occurrence);
// deleting text also deletes the newline after it, as Claude Code does.
func applyEditToFile(content, old, newStr string, all bool) string {
	replace := func(c, o string) string {
		if all {
			return strings.ReplaceAll(c, o, newStr)
		}
		return strings.Replace(c, o, newStr, 1)
	}
	if newStr == "" && !strings.HasSuffix(old, "\n") && strings.Contains(content, old+"\n") {
		return replace(content, old+"\n")
	}
	return replace(content, old)
}
