package main

import "testing"

func TestDetaches(t *testing.T) {
	for cmd, want := range map[string]bool{
		"sleep 5 &":                        true,
		"(sleep 5; rm -rf .des) & echo hi": true,
		"nohup sh -c x":                    true,
		"setsid x":                         true,
		"a && b":                           false,
		"make >out 2>&1":                   false,
		"cmd &> log":                       false,
		"cmd |& tee x":                     false,
		"echo 'look at home'":              false,
		"crontab -l | crontab -":           true,
		"go test ./... && git status":      false,
	} {
		if got := detaches().MatchString(cmd); got != want {
			t.Errorf("detaches(%q) = %v, want %v", cmd, got, want)
		}
	}
}
