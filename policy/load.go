package policy

import (
	"fmt"
	"io/fs"
	"path"
	"strings"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/loader"

	"github.com/deterministic-exec/des/internal/datadoc"
)

// source is one place policies come from.
type source struct {
	name   string // shown in errors
	fsys   fs.FS  // nil: paths are on the OS file system
	paths  []string
	prefix string // where the source's data goes under data, "" for the root
}

// loaded is what every source yields together.
type loaded struct {
	modules map[string]*ast.Module
	data    map[string]any
}

// isTestFile reports whether a Rego file holds tests, which are never policy.
func isTestFile(name string) bool { return strings.HasSuffix(name, "_test.rego") }

// isDataFile reports whether a file is a data document, named as in an OPA bundle.
func isDataFile(name string) bool {
	switch path.Base(strings.ReplaceAll(name, `\`, "/")) {
	case "data.json", "data.yaml", "data.yml":
		return true
	}
	return false
}

// skip is the loader filter: tests, stray JSON/YAML and hidden entries below
// the top are not loaded.
func skip(abspath string, info fs.FileInfo, depth int) bool {
	name := info.Name()
	if depth > 0 && strings.HasPrefix(name, ".") {
		return true
	}
	if info.IsDir() {
		return false
	}
	switch {
	case strings.HasSuffix(name, ".rego"):
		return isTestFile(name)
	case strings.HasSuffix(name, ".tar.gz"):
		return false
	default:
		return !isDataFile(name)
	}
}

func load(sources []source, regoVersion ast.RegoVersion, caps *ast.Capabilities) (loaded, error) {
	out := loaded{modules: map[string]*ast.Module{}, data: map[string]any{}}
	var errs Errors
	for _, src := range sources {
		fl := loader.NewFileLoader().
			WithProcessAnnotation(true).
			WithRegoVersion(regoVersion).
			WithCapabilities(caps).
			WithSkipBundleVerification(true)
		if src.fsys != nil {
			fl = fl.WithFS(src.fsys)
		}
		res, err := fl.Filtered(src.paths, skip)
		if err != nil {
			errs = append(errs, toErrors(err)...)
			continue
		}
		for name, f := range res.Modules {
			if isTestFile(name) { // tests inside a bundle file escape the filter
				continue
			}
			key := src.name + ":" + name
			if _, dup := out.modules[key]; dup {
				errs = append(errs, &Error{File: name, Message: "loaded twice; name each policy source once"})
				continue
			}
			out.modules[key] = f.Parsed
		}
		docs := res.Documents
		if src.prefix != "" {
			docs = map[string]any{src.prefix: docs}
		}
		if err := datadoc.Merge(out.data, docs); err != nil {
			errs = append(errs, &Error{File: src.name, Message: err.Error()})
		}
	}
	if len(errs) > 0 {
		return loaded{}, errs
	}
	return out, nil
}

// setData places value at the dotted path under data, replacing what is there.
func setData(data map[string]any, dotted string, value any) error {
	parts := strings.Split(dotted, ".")
	node := data
	for i, p := range parts[:len(parts)-1] {
		next, ok := node[p].(map[string]any)
		if !ok {
			if _, exists := node[p]; exists {
				return fmt.Errorf("set data.%s: data.%s is not an object", dotted, strings.Join(parts[:i+1], "."))
			}
			next = map[string]any{}
			node[p] = next
		}
		node = next
	}
	node[parts[len(parts)-1]] = value
	return nil
}
