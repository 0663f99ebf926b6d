package policy

import "github.com/open-policy-agent/opa/v1/ast"

// withheld are the built-ins a des policy may not call: they reach the network
// or the environment, or draw random values, and would make a gate's decision
// depend on more than its input, its data and the time the caller gives.
var withheld = map[string]bool{
	"http.send":          true,
	"net.lookup_ip_addr": true,
	"opa.runtime":        true,
	"rand.intn":          true,
	"uuid.rfc4122":       true,
}

// Capabilities returns the capabilities des compiles policies with: those of
// the OPA version built in, less the withheld built-ins. Tools that check a
// team's policies (opa check --capabilities) can write it out as JSON.
func Capabilities() *ast.Capabilities {
	caps := ast.CapabilitiesForThisVersion()
	kept := caps.Builtins[:0:0]
	for _, b := range caps.Builtins {
		if !withheld[b.Name] {
			kept = append(kept, b)
		}
	}
	caps.Builtins = kept
	return caps
}
