package main

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestBundlePullWithoutBundles(t *testing.T) {
	t.Parallel()
	env := envMap{"CLAUDE_PROJECT_DIR": t.TempDir()}
	res := runCLI(t, env, "bundle", "pull")
	if res.code != 0 || !strings.Contains(res.stdout, "bundle_urls names none") {
		t.Errorf("bundle pull without bundles = %d %q %q", res.code, res.stdout, res.stderr)
	}
	res = runCLI(t, env, "bundle", "pull", "--json")
	var out struct {
		Bundles []any `json:"bundles"`
	}
	if err := json.Unmarshal([]byte(res.stdout), &out); err != nil || res.code != 0 || out.Bundles == nil || len(out.Bundles) != 0 {
		t.Errorf("bundle pull --json without bundles = %d %q (%v)", res.code, res.stdout, err)
	}
}

func TestBundleUsageAndSettingErrors(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	for _, tc := range []struct {
		args []string
		env  envMap
		code int
		want string
	}{
		{[]string{"bundle"}, nil, 2, "usage: des-hook bundle pull"},
		{[]string{"bundle", "push"}, nil, 2, "usage: des-hook bundle pull"},
		{[]string{"bundle", "-h"}, nil, 0, "usage: des-hook bundle pull"},
		{[]string{"bundle", "pull", "now"}, nil, 2, "unexpected arguments"},
		// No key: the settings refuse bundle_urls alone.
		{[]string{"bundle", "pull"}, envMap{"DES_BUNDLE_URLS": "https://example.com/b.tar.gz"}, 2, "bundle_public_key"},
		// A key file that is not there.
		{[]string{"bundle", "pull"}, envMap{"DES_BUNDLE_URLS": "https://example.com/b.tar.gz", "DES_BUNDLE_PUBLIC_KEY": "missing.pem"}, 2, "setting bundle_public_key from DES_BUNDLE_PUBLIC_KEY: cannot read the key"},
	} {
		env := envMap{"CLAUDE_PROJECT_DIR": root}
		for k, v := range tc.env {
			env[k] = v
		}
		res := runCLI(t, env, tc.args...)
		if res.code != tc.code || !strings.Contains(res.stderr, tc.want) {
			t.Errorf("%v = %d, stderr %q; want %d and %q", tc.args, res.code, res.stderr, tc.code, tc.want)
		}
	}
}

func TestVersionAndStatusShowBundles(t *testing.T) {
	t.Parallel()
	env := envMap{"CLAUDE_PROJECT_DIR": t.TempDir(), "DES_BUNDLE_URLS": "https://example.com/acme.tar.gz", "DES_BUNDLE_PUBLIC_KEY": "missing.pem", "DES_OPA_URL": "http://127.0.0.1:8181"}
	res := runCLI(t, env, "version")
	for _, want := range []string{"decisions: http://127.0.0.1:8181", "bundles: 1", "https://example.com/acme.tar.gz", "never", "NOT IN USE: setting bundle_public_key"} {
		if !strings.Contains(res.stdout, want) || res.code != 0 {
			t.Errorf("version lacks %q: %d\n%s%s", want, res.code, res.stdout, res.stderr)
		}
	}
	res = runCLI(t, env, "status", "--json")
	var st struct {
		DecisionPoint  string `json:"decision_point"`
		DelegationMode string `json:"delegation_mode"`
		Bundles        []struct {
			URL     string `json:"url"`
			Stale   bool   `json:"stale"`
			Problem string `json:"problem"`
		} `json:"bundles"`
	}
	if err := json.Unmarshal([]byte(res.stdout), &st); err != nil || st.DecisionPoint != "http://127.0.0.1:8181" || st.DelegationMode != "off" ||
		len(st.Bundles) != 1 || !st.Bundles[0].Stale || !strings.Contains(st.Bundles[0].Problem, "missing.pem") {
		t.Errorf("status --json = %v\n%s", err, res.stdout)
	}
	// Settings that do not load: the versions stand.
	res = runCLI(t, envMap{"CLAUDE_PROJECT_DIR": t.TempDir(), "DES_STALE_THRESHOLD_MINUTES": "soon"}, "version", "--json")
	var v struct {
		OPA           string `json:"opa"`
		SettingsError string `json:"settings_error"`
	}
	if err := json.Unmarshal([]byte(res.stdout), &v); err != nil || res.code != 0 || v.OPA == "" || !strings.Contains(v.SettingsError, "stale_threshold_minutes") {
		t.Errorf("version --json with a bad setting = %d %v\n%s", res.code, err, res.stdout)
	}
}
