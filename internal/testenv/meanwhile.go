package testenv

import (
	"sync"
	"testing"
)

// Meanwhile runs body over and over in a goroutine of its own, beside what
// the test runs (an agent racing des: swapping a file for a link or a pipe,
// say), until stop is called or the test ends. stop waits for the body's
// last run to return, and may be called more than once.
func Meanwhile(t testing.TB, body func()) (stop func()) {
	quit, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-quit:
				return
			default:
			}
			body()
		}
	}()
	var once sync.Once
	stop = func() { once.Do(func() { close(quit); <-done }) }
	t.Cleanup(stop)
	return stop
}
