package policy

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/bundle"
	"github.com/open-policy-agent/opa/v1/util"

	"github.com/deterministic-exec/des/internal/datadoc"
)

// source is one place policies come from.
type source struct {
	name   string // shown in errors, and as the directory of its files
	fsys   fs.FS  // nil: path is on the OS file system
	path   string // a directory, a .rego file or a bundle file; "." for an fs.FS
	prefix string // where the source's data goes under data, "" for the root
	bundle bool   // an OPA bundle (.tar.gz or directory with a .manifest)
	base   bool   // the built-in bundle: its data is what team data files patch
}

// regoFile is one policy module, parsed only when a gate needs it.
type regoFile struct {
	name   string      // file name shown in errors (path as given, or inside its bundle)
	pkg    string      // package path without "data.", from a quick scan; "" until parsed if the scan failed
	src    []byte      // nil for modules a bundle reader already parsed
	module *ast.Module // parsed module, nil until parsed
}

// loaded is what every source yields together.
type loaded struct {
	files []*regoFile
	data  map[string]any
}

// isTestFile reports whether a Rego file holds tests, which are never policy.
func isTestFile(name string) bool { return strings.HasSuffix(name, "_test.rego") }

// isDataFile reports whether a file is a data document, named as in an OPA bundle.
func isDataFile(name string) bool {
	switch path.Base(filepath.ToSlash(name)) {
	case "data.json", "data.yaml", "data.yml":
		return true
	}
	return false
}

// load reads every source. The data of the base source is merged as is; the
// data files of the others are laid over it (datadoc.Apply), and none may
// set a value at one of the reserved paths, which the caller sets.
func load(sources []source, reserved [][]string) (loaded, error) {
	out := loaded{data: map[string]any{}}
	var errs Errors
	var patches []datadoc.Patch
	for _, src := range sources {
		var files []*regoFile
		var docs []datadoc.Patch
		var err error
		if src.bundle && strings.HasSuffix(src.path, ".tar.gz") {
			files, docs, err = loadBundleFile(src.path)
		} else {
			files, docs, err = loadTree(src)
		}
		if err != nil {
			errs = append(errs, toErrors(err)...)
			continue
		}
		out.files = append(out.files, files...)
		for _, d := range docs {
			if src.prefix != "" {
				d.Doc = map[string]any{src.prefix: d.Doc}
			}
			if !src.base {
				patches = append(patches, d)
				continue
			}
			if err := datadoc.Merge(out.data, d.Doc); err != nil {
				errs = append(errs, &Error{File: d.File, Message: err.Error()})
			}
		}
	}
	if len(errs) == 0 {
		var conflict *datadoc.ConflictError
		if err := datadoc.Apply(out.data, patches, reserved...); errors.As(err, &conflict) {
			errs = append(errs, &Error{File: conflict.File, Message: conflict.Error()})
		} else if err != nil {
			errs = append(errs, &Error{Message: err.Error()})
		}
	}
	if len(errs) > 0 {
		return loaded{}, errs
	}
	return out, nil
}

// loadTree reads the .rego and data files of a directory (or one .rego
// file). Test files, stray JSON/YAML and hidden entries below the top are
// skipped; each data file is placed under data at its directory's path.
func loadTree(src source) ([]*regoFile, []datadoc.Patch, error) {
	fsys, root := src.fsys, src.path
	if fsys == nil {
		info, err := os.Stat(src.path)
		if err != nil {
			return nil, nil, err
		}
		if !info.IsDir() {
			fsys, root = os.DirFS(filepath.Dir(src.path)), filepath.Base(src.path)
		} else {
			fsys, root = os.DirFS(src.path), "."
		}
	}
	display := func(p string) string {
		if src.fsys != nil {
			return path.Join(src.name, p)
		}
		if info, err := os.Stat(src.path); err == nil && !info.IsDir() {
			return src.name
		}
		return filepath.Join(src.name, filepath.FromSlash(p))
	}
	var files []*regoFile
	var docs []datadoc.Patch
	err := fs.WalkDir(fsys, root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if p != root && strings.HasPrefix(name, ".") {
			if d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		switch {
		case d.IsDir():
			return nil
		case strings.HasSuffix(name, ".rego") && !isTestFile(name):
			b, err := fs.ReadFile(fsys, p)
			if err != nil {
				return err
			}
			files = append(files, &regoFile{name: display(p), pkg: scanPackage(b), src: b})
		case isDataFile(name):
			b, err := fs.ReadFile(fsys, p)
			if err != nil {
				return err
			}
			var doc any
			if err := util.Unmarshal(b, &doc); err != nil {
				return &Error{File: display(p), Message: "not valid JSON or YAML: " + err.Error()}
			}
			obj, ok := doc.(map[string]any)
			if !ok {
				return &Error{File: display(p), Message: "a data file must hold an object"}
			}
			dir := path.Dir(p)
			if rel := strings.TrimPrefix(strings.TrimPrefix(dir, root), "/"); rel != "" && rel != "." {
				parts := strings.Split(rel, "/")
				for i := len(parts) - 1; i >= 0; i-- {
					obj = map[string]any{parts[i]: obj}
				}
			}
			docs = append(docs, datadoc.Patch{File: display(p), Doc: obj})
		}
		return nil
	})
	return files, docs, err
}

// loadBundleFile reads a bundle built by `opa build`. Its modules come
// parsed; test modules are left out.
func loadBundleFile(name string) ([]*regoFile, []datadoc.Patch, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	b, err := bundle.NewReader(f).
		WithProcessAnnotations(true).
		WithRegoVersion(ast.RegoV1).
		WithSkipBundleVerification(true).
		Read()
	if err != nil {
		return nil, nil, fmt.Errorf("bundle %s: %w", name, err)
	}
	var files []*regoFile
	for _, m := range b.Modules {
		if isTestFile(m.Path) {
			continue
		}
		files = append(files, &regoFile{name: name + ":" + m.Path, pkg: packagePath(m.Parsed), module: m.Parsed})
	}
	return files, []datadoc.Patch{{File: name, Doc: b.Data}}, nil
}

// scanPackage reads the package path of a Rego file from its first line
// that is not blank or a comment, without parsing the file. It returns ""
// for anything unusual; such a file is parsed to learn its package.
func scanPackage(src []byte) string {
	for line := range bytes.Lines(src) {
		line = bytes.TrimSpace(line)
		if len(line) == 0 || line[0] == '#' {
			continue
		}
		rest, ok := bytes.CutPrefix(line, []byte("package "))
		if !ok {
			return ""
		}
		if i := bytes.IndexByte(rest, '#'); i >= 0 {
			rest = rest[:i]
		}
		pkg := string(bytes.TrimSpace(rest))
		if pkg == "" || strings.ContainsAny(pkg, "[]\"` \t") {
			return ""
		}
		return pkg
	}
	return ""
}

func packagePath(m *ast.Module) string {
	if m == nil || m.Package == nil {
		return ""
	}
	return strings.TrimPrefix(m.Package.Path.String(), "data.")
}

// parse parses the file once.
func (f *regoFile) parse() (*ast.Module, error) {
	if f.module != nil {
		return f.module, nil
	}
	m, err := ast.ParseModuleWithOpts(f.name, string(f.src), ast.ParserOptions{RegoVersion: ast.RegoV1, ProcessAnnotation: true})
	if err != nil {
		return nil, err
	}
	if m == nil {
		return nil, &Error{File: f.name, Message: "empty module: a Rego file needs a package declaration"}
	}
	f.module, f.pkg = m, packagePath(m)
	return m, nil
}

// parseAll parses every file, reporting every parse error.
func parseAll(files []*regoFile) (map[string]*ast.Module, error) {
	mods := make(map[string]*ast.Module, len(files))
	var errs Errors
	for i, f := range files {
		m, err := f.parse()
		if err != nil {
			errs = append(errs, toErrors(err)...)
			continue
		}
		mods[moduleKey(i, f)] = m
	}
	if len(errs) > 0 {
		return nil, errs
	}
	return mods, nil
}

func moduleKey(i int, f *regoFile) string { return fmt.Sprintf("%04d:%s", i, f.name) }

// closure parses and returns the modules a gate package needs: its own
// files and, transitively, those of every package its rules refer to under
// data or import. Files of unrelated packages are neither parsed nor
// compiled, so a start-up pays for one gate, not for all.
func closure(files []*regoFile, gatePkg string) (map[string]*ast.Module, error) {
	// Files whose package the quick scan missed are parsed to learn it.
	for _, f := range files {
		if f.pkg == "" {
			if _, err := f.parse(); err != nil {
				return nil, err
			}
		}
	}
	mods := map[string]*ast.Module{}
	seen := map[string]bool{}
	queue := []string{gatePkg}
	var errs Errors
	for len(queue) > 0 {
		want := queue[0]
		queue = queue[1:]
		if seen[want] {
			continue
		}
		seen[want] = true
		for i, f := range files {
			if !related(f.pkg, want) {
				continue
			}
			key := moduleKey(i, f)
			if _, done := mods[key]; done {
				continue
			}
			m, err := f.parse()
			if err != nil {
				errs = append(errs, toErrors(err)...)
				continue
			}
			mods[key] = m
			queue = append(queue, dataRefs(m)...)
		}
	}
	if len(errs) > 0 {
		return nil, errs
	}
	return mods, nil
}

// related reports whether package pkg serves a reference to path: the path
// is in the package, or the package lies under the path (a reference to a
// whole subtree, such as data.des). The empty path is a reference whose
// first element is not a string (data[x]): it may reach any package.
func related(pkg, path string) bool {
	return path == "" || pkg == path || strings.HasPrefix(path, pkg+".") || strings.HasPrefix(pkg, path+".")
}

// dataRefs lists the ground prefixes ("des.sections.level") of the data
// references and imports of a module.
func dataRefs(m *ast.Module) []string {
	var out []string
	add := func(r ast.Ref) {
		if len(r) == 0 || !r[0].Equal(ast.DefaultRootDocument) {
			return
		}
		var parts []string
		for _, t := range r[1:] {
			s, ok := t.Value.(ast.String)
			if !ok {
				break
			}
			parts = append(parts, string(s))
		}
		// With no string prefix (bare data, data[x]) the reference may reach
		// any package: "" makes the closure take every file.
		if p := strings.Join(parts, "."); !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	for _, imp := range m.Imports {
		if r, ok := imp.Path.Value.(ast.Ref); ok {
			add(r)
		}
	}
	// The rules only: the package clause is no reference (walking the whole
	// module would make a package need every package below it, so that
	// des.phases would pull in des.phases.guards).
	for _, rule := range m.Rules {
		ast.WalkRefs(rule, func(r ast.Ref) bool { add(r); return false })
	}
	return out
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
