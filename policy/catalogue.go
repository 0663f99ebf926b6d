package policy

import (
	"cmp"
	"slices"
	"strconv"
	"strings"

	"github.com/open-policy-agent/opa/v1/ast"
)

// Rule is one entry of the catalogue: a code some rule can yield.
type Rule struct {
	Package     string   `json:"package"` // e.g. "des.stepfile"
	Code        string   `json:"code"`
	Severity    Severity `json:"severity"`
	Title       string   `json:"title,omitempty"`
	Description string   `json:"description,omitempty"`
	Location    string   `json:"location,omitempty"` // file:row of the rule
}

// Catalogue lists every code the loaded policies can yield, sorted by code
// and then package. An entry comes from a rule's METADATA annotation
// (custom.code, custom.severity, title, description) and from the literal
// {"code": ...} objects in the bodies and heads of deny and warn rules, so a
// rule without annotations still appears, with an empty title. A code built
// at run time (sprintf, say) cannot be found and is not listed. It compiles
// every policy, also in an engine built WithLazyCompile, and returns the
// compile error if one does not.
func (e *Engine) Catalogue() ([]Rule, error) {
	c, err := e.compileAll()
	if err != nil {
		return nil, err
	}
	c.catOnce.Do(c.buildCatalogue)
	return slices.Clone(c.catalogue), nil
}

// policyOf names the package that yields a code, among the modules of this
// compiler.
func (c *compiled) policyOf(code string) string {
	c.catOnce.Do(c.buildCatalogue)
	return c.byCode[code]
}

func (c *compiled) buildCatalogue() {
	type key struct{ pkg, code string }
	found := map[key]*Rule{}
	add := func(r Rule) {
		k := key{r.Package, r.Code}
		cur, ok := found[k]
		if !ok {
			found[k] = &r
			return
		}
		// Annotations fill what a body scan cannot know.
		cur.Title = cmp.Or(cur.Title, r.Title)
		cur.Description = cmp.Or(cur.Description, r.Description)
		cur.Severity = cmp.Or(cur.Severity, r.Severity)
		cur.Location = cmp.Or(cur.Location, r.Location)
	}

	for _, ref := range c.compiler.GetAnnotationSet().Flatten() {
		a := ref.Annotations
		if a == nil || a.Scope != "rule" {
			continue
		}
		code, _ := a.Custom["code"].(string)
		if code == "" {
			continue
		}
		sev, _ := a.Custom["severity"].(string)
		r := Rule{
			Package:     packageName(ref.GetPackage()),
			Code:        code,
			Severity:    Severity(sev),
			Title:       a.Title,
			Description: strings.TrimSpace(a.Description),
		}
		if rule := ref.GetRule(); rule != nil {
			r.Location = location(rule.Location)
			if r.Severity == "" {
				r.Severity = ruleSeverity(rule)
			}
		}
		add(r)
	}

	for _, m := range c.compiler.Modules {
		for _, rule := range m.Rules {
			sev := ruleSeverity(rule)
			if sev == "" {
				continue
			}
			for _, code := range literalCodes(rule) {
				add(Rule{Package: packageName(m.Package), Code: code, Severity: sev, Location: location(rule.Location)})
			}
		}
	}

	c.catalogue = make([]Rule, 0, len(found))
	c.byCode = make(map[string]string, len(found))
	for _, r := range found {
		c.catalogue = append(c.catalogue, *r)
	}
	slices.SortFunc(c.catalogue, func(a, b Rule) int {
		return cmp.Or(cmp.Compare(a.Code, b.Code), cmp.Compare(a.Package, b.Package))
	})
	for _, r := range c.catalogue {
		if _, ok := c.byCode[r.Code]; !ok {
			c.byCode[r.Code] = r.Package
		}
	}
}

// ruleSeverity is the severity a rule's name implies: deny, warn, or none.
func ruleSeverity(r *ast.Rule) Severity {
	switch r.Head.Name.String() {
	case "deny":
		return Deny
	case "warn":
		return Warn
	}
	if ref := r.Head.Ref(); len(ref) > 0 {
		switch ref[0].String() {
		case "deny":
			return Deny
		case "warn":
			return Warn
		}
	}
	return ""
}

// literalCodes finds the string values of "code" keys in object literals of a rule.
func literalCodes(r *ast.Rule) []string {
	var codes []string
	ast.WalkTerms(r, func(t *ast.Term) bool {
		obj, ok := t.Value.(ast.Object)
		if !ok {
			return false
		}
		if v := obj.Get(ast.StringTerm("code")); v != nil {
			if s, ok := v.Value.(ast.String); ok && !slices.Contains(codes, string(s)) {
				codes = append(codes, string(s))
			}
		}
		return false
	})
	return codes
}

func packageName(p *ast.Package) string {
	if p == nil {
		return ""
	}
	return strings.TrimPrefix(p.Path.String(), "data.")
}

func location(l *ast.Location) string {
	if l == nil {
		return ""
	}
	return l.File + ":" + strconv.Itoa(l.Row)
}
