package des

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/deterministic-exec/des/internal/buildinfo"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/topdown"
	"github.com/open-policy-agent/opa/v1/version"

	"github.com/deterministic-exec/des/internal/decisionlog"
	"github.com/deterministic-exec/des/policy"
	"github.com/deterministic-exec/des/rego"
)

// DecisionsDir is where des keeps decision logs (setting decision_log),
// relative to the project root: JSON lines in OPA's decision-log format, one
// file a day, ignored by git (the directory holds a .gitignore of its own).
const DecisionsDir = ".des/decisions"

// installationIDFile names the file of des's per-user state directory that
// holds the installation's id, the labels.id of its decision logs.
const installationIDFile = "installation-id"

// decisionLog is an Engine's decision log, opened on the first decision
// when the setting decision_log is "on".
type decisionLog struct {
	once    sync.Once
	log     *decisionlog.Log
	labels  map[string]string
	bundles map[string]decisionlog.BundleInfo
}

// logDecision appends the evaluation of gate on input to the decision log.
// A decision that cannot be logged is still the decision: the failure is
// reported to the Engine's logger (a warning) and nothing else, whatever it
// is.
func (e *Engine) logDecision(ctx context.Context, gate policy.Gate, input any, d policy.Decision, evalErr error, took time.Duration) {
	if e.cfg.DecisionLog != DecisionLogOn {
		return
	}
	defer func() {
		if r := recover(); r != nil {
			e.logger.ErrorContext(ctx, "decision not logged; the decision stands", "gate", string(gate), "panic", r)
		}
	}()
	dl := &e.dlog
	dl.once.Do(func() {
		dl.log = decisionlog.OpenIn(e.root, DecisionsDir, decisionlog.Options{
			Mask: e.cfg.DecisionLogMask, MaxBytes: int64(e.cfg.DecisionLogMaxBytes),
			MaxAge: time.Duration(e.cfg.DecisionLogMaxAgeDays) * 24 * time.Hour,
		})
		dl.bundles = e.decisionBundles()
		dl.labels = map[string]string{"version": version.Version, "app": "des", "des_version": buildinfo.Version(), "decision_point": e.DecisionPoint()}
		// The witnesses sit in the per-user state directory's base. Without
		// an id the decisions are still worth logging.
		id, err := decisionlog.InstallationID(filepath.Join(filepath.Dir(e.witnessDir), installationIDFile))
		if err != nil {
			e.logger.WarnContext(ctx, "decision logs: no installation id (labels.id)", "err", err)
		} else {
			dl.labels["id"] = id
		}
	})
	ev := decisionEvent(dl, gate, input, d, evalErr, took, e.now())
	// The audit trail's head as it stands before this decision's entries:
	// a log pushed out of the agent's reach pins the trail (an anchor,
	// which `des-hook audit verify` checks against the trail).
	if h, ok := e.audit.Head(); ok {
		ev.AuditHead = &decisionlog.AuditHead{Dir: h.Dir, Host: h.Host, Seq: h.Seq, SHA256: h.SHA256}
	}
	if err := dl.log.Append(ev); err != nil {
		e.logger.WarnContext(ctx, "decision not logged; the decision stands", "gate", string(gate), "err", err)
	}
}

func decisionEvent(dl *decisionLog, gate policy.Gate, input any, d policy.Decision, evalErr error, took time.Duration, now time.Time) decisionlog.Event {
	ev := decisionlog.Event{
		Labels:      dl.labels,
		Bundles:     dl.bundles,
		Path:        "des/gates/" + string(gate),
		RequestedBy: "des",
		Timestamp:   now.UTC(),
		Metrics:     map[string]any{"timer_rego_query_eval_ns": took.Nanoseconds()},
	}
	var err error
	if ev.DecisionID, err = decisionlog.NewDecisionID(); err != nil {
		ev.Error = &decisionlog.Error{Code: "internal_error", Message: err.Error()}
	}
	if v, ok := input.(ast.Value); ok {
		if input, err = ast.JSON(v); err != nil {
			input = nil
		}
	}
	if input != nil {
		if ev.Input, err = decisionlog.Document(input); err != nil {
			ev.Error = &decisionlog.Error{Code: "internal_error", Message: "input: " + err.Error()}
		}
	}
	if evalErr != nil {
		code := "internal_error"
		if te := (*topdown.Error)(nil); errors.As(evalErr, &te) {
			code = te.Code
		}
		ev.Error = &decisionlog.Error{Code: code, Message: evalErr.Error()}
		return ev
	}
	// A copy: the mask must not edit the decision's info and details, which
	// the caller acts on.
	if ev.Result, err = decisionlog.Document(decisionResult(d)); err != nil {
		ev.Error = &decisionlog.Error{Code: "internal_error", Message: "result: " + err.Error()}
	}
	return ev
}

// decisionResult is the decision part of what OPA's data API returns for
// data.des.gates.<gate>: the deny and warn sets as the policy yielded them
// (waived violations included: the exception set is applied after
// evaluation), the exception codes that waived one of them (left out when
// none did, as OPA leaves out a package's undefined exception set), and
// info when the gate defines it. Sets are arrays, as OPA writes them. The
// package's helper rules, which the data API would add, are not evaluated.
func decisionResult(d policy.Decision) map[string]any {
	deny, warn := []any{}, []any{}
	for _, v := range d.Deny {
		deny = append(deny, violationDoc(v))
	}
	for _, v := range d.Warn {
		warn = append(warn, violationDoc(v))
	}
	var exception []any
	for _, v := range d.Waived {
		if v.Severity == policy.Deny {
			deny = append(deny, violationDoc(v))
		} else {
			warn = append(warn, violationDoc(v))
		}
		if !slices.Contains(exception, any(v.Code)) {
			exception = append(exception, v.Code)
		}
	}
	out := map[string]any{"deny": deny, "warn": warn}
	if exception != nil {
		out["exception"] = exception
	}
	if d.Info != nil {
		out["info"] = d.Info
	}
	return out
}

// violationDoc is a violation as the Rego object that yielded it.
func violationDoc(v policy.Violation) map[string]any {
	m := make(map[string]any, len(v.Details)+4)
	for k, x := range v.Details {
		m[k] = x
	}
	m["code"], m["msg"] = v.Code, v.Message
	if v.Field != "" {
		m["field"] = v.Field
	}
	if v.Recovery != nil {
		m["recovery"] = v.Recovery
	}
	return m
}

// decisionBundles are the bundles decisions are made with, by name, with
// their revisions, for the events' "bundles": the built-in policies ("des",
// at rego.Revision) and the organisation's bundles in use. With opa_url the
// server decides: its revision of the built-in policies is checked equal to
// this des's, and its other bundles are the server's own business (its
// decision log names them), so only "des" is listed.
func (e *Engine) decisionBundles() map[string]decisionlog.BundleInfo {
	out := map[string]decisionlog.BundleInfo{"des": {Revision: rego.Revision()}}
	if e.remote != nil {
		return out
	}
	// The organisation's bundles, by their names under .des/bundles.
	for _, b := range e.bundles {
		if b.Problem == "" {
			out[b.Name] = decisionlog.BundleInfo{Revision: b.Revision}
		}
	}
	return out
}

// Replay decides gate on a recorded input (a decision log event's) as
// Evaluate would, with none of its effects: no decision logged, no waiver
// audited. In process the policies read at as the time (time.now_ns), the
// recorded decision's; an OPA server (opa_url) has its own clock.
func (e *Engine) Replay(ctx context.Context, gate policy.Gate, input any, at time.Time) (policy.Decision, error) {
	return e.decide(ctx, gate, input, at)
}
