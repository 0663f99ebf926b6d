// Package policy is des's OPA engine: it loads the built-in Rego bundle and a
// team's policies, compiles them once, prepares one query per gate, and turns
// each evaluation into a typed [Decision].
//
// # Life cycle
//
// [New] loads and compiles every source (strict mode, Rego v1) and fails with
// an [Errors] value, each entry carrying file:line:col, when a policy does not
// parse or compile. The query for a gate is prepared on its first [Engine.Eval]
// and reused after; an Engine is safe for concurrent use.
//
// # The gate interface
//
// Each gate is the Rego package des.gates.<gate>, where <gate> is one of the
// [Gate] constants. It may define three sets:
//
//   - deny: objects {"code", "msg", optional "field" (a JSON pointer),
//     optional "recovery" (a list of strings), anything else}. Any deny blocks.
//   - warn: objects of the same shape. Warnings inform.
//   - exception: codes (strings). A deny or warn whose code is listed is moved
//     to [Decision.Waived]; the caller records each waiver. A deny or warn
//     object with "unwaivable": true is never waived, and one with
//     "refused_exception": CODE keeps CODE from being waived in the same
//     decision: its policy decided that no exception may (des.exceptions
//     does, for the codes an organisation lists in
//     data.des.exceptions.unwaivable).
//
// It may also define info, an object of facts the policy derived that the
// caller needs to act on the decision ([Decision.Info]).
//
// A team extends a gate by adding rules to the same package: partial set rules
// merge. Rule names other than these three are the gate's own business.
//
// # Sources
//
// The built-in bundle (package [github.com/deterministic-exec/des/rego]) is
// always loaded. [WithDirs] adds directories of .rego files, [WithBundles] adds
// bundle files built by `opa build` (.tar.gz) or bundle directories. In every
// source, *_test.rego files are never evaluated as policy, and data files are
// read only when named data.json, data.yaml or data.yml, as in an OPA bundle;
// their content is placed under data at the directory's path.
//
// # Data
//
// The data files of the other sources are laid over the built-in data as JSON
// merge patches (RFC 7396): objects merge key by key, null removes a key, and
// any other value (arrays too) replaces the built-in value whole, so a team
// changes a built-in table without copying it. Those files must agree: two
// that set the same value differently are an [Error] in the second file
// naming the first, as are data files setting what [WithData] sets, which
// comes last. As in OPA, no rule may sit at or below a path the data sets
// (it would hide the data: a team rule could empty a list an organisation
// publishes); New fails naming the rule.
//
// # Determinism
//
// Policies see the evaluation time the caller gives with [At] (time.now_ns),
// and none of the built-ins that reach the network or the environment or that
// draw random values: http.send, net.lookup_ip_addr, opa.runtime, rand.intn
// and uuid.rfc4122 are removed from the capabilities, so a policy that calls
// one fails to compile.
//
// # On an OPA server
//
// [Remote] asks a running OPA server for the same decisions, through OPA's
// REST data API (POST /v1/data/des/gates/<gate>), the server loaded with the
// built-in bundle and any other policies. Its answer goes through the same
// checks and sorting as [Engine.Eval]; an undefined gate is [ErrUndefinedGate],
// any other failure a [*RemoteError], never an empty decision. The server has
// its own clock and capabilities. [Evaluator] is what both satisfy.
package policy
