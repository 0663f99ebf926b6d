package policytest

import (
	"os"
	"testing"

	"github.com/deterministic-exec/des/internal/testenv"
)

func TestMain(m *testing.M) {
	testenv.LessGC()
	os.Exit(m.Run())
}
