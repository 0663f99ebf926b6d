package opatest_test

import (
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/deterministic-exec/des/internal/opatest"
	"github.com/deterministic-exec/des/internal/testenv"
)

func TestStartServesPolicies(t *testing.T) {
	testenv.Long(t)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "p.rego"), []byte("package t\n\nx := 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	s := opatest.Start(t, opatest.Options{}, dir)
	resp, err := http.Post(s.URL+"/v1/data/t/x", "application/json", strings.NewReader(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), `"result":1`) {
		t.Fatalf("POST /v1/data/t/x = %d %s", resp.StatusCode, body)
	}
}
