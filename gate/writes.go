package gate

import (
	"context"
	"time"
)

// Writes is told of each file DES writes in the project, before and after
// the write, so that a check of tool-call effects running at the same time
// (internal/integrity) takes it for DES's own write and does not undo it.
// A gate with a nil Writes tells nothing.
type Writes interface {
	// Expect announces that path is about to hold data (nil: be removed).
	Expect(path string, data []byte) error
	// Settle is called once the write is done.
	Settle(ctx context.Context, path string) error
}

// Announced runs write, telling w about it. Telling is best effort: a
// failure to tell only risks a concurrent check undoing the write, which
// is no reason to leave the write undone.
func Announced(ctx context.Context, w Writes, path string, data []byte, write func() error) error {
	return announcedAll(ctx, w, []string{path}, data, write)
}

// settlesAll is a Writes that settles several writes at once
// (internal/integrity's Checker): one update of its baseline, not one per
// file.
type settlesAll interface {
	SettleAll(ctx context.Context, paths ...string) error
}

// writesOwn is a Writes that can run DES's write while no check runs
// (internal/integrity's Checker, under its lock) and record it then:
// nothing to announce or settle. It declines (false, write not run) when
// a check runs; the write is then announced.
type writesOwn interface {
	WriteOwn(ctx context.Context, paths []string, data []byte, write func() error) (bool, error)
}

// announcedAll is Announced for a write that puts the same data at each of
// paths.
func announcedAll(ctx context.Context, w Writes, paths []string, data []byte, write func() error) error {
	if w == nil {
		return write()
	}
	if own, ok := w.(writesOwn); ok {
		if ran, err := own.WriteOwn(ctx, paths, data, write); ran {
			return err
		}
	}
	for _, p := range paths {
		_ = w.Expect(p, data)
	}
	err := write()
	// The write is done whatever the caller's context says now; telling
	// about it waits at most settleWait (a held lock must not stall a gate).
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), settleWait)
	defer cancel()
	if all, ok := w.(settlesAll); ok {
		_ = all.SettleAll(sctx, paths...)
		return err
	}
	for _, p := range paths {
		_ = w.Settle(sctx, p)
	}
	return err
}

// settleWait bounds Writes.Settle after each of DES's writes.
const settleWait = 2 * time.Second
