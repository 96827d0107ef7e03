package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/offline"
)

// TestRun: render is offline.Main with the arguments after it, so that
// `kubectl secondary-scheduler render` does all `manager render` did (internal/offline's
// goldens test what it prints); anything else is a usage error.
func TestRun(t *testing.T) {
	for _, tc := range []struct {
		name       string
		args       []string
		wantCode   int
		wantStdout string
		wantStderr string
	}{
		{name: "render", args: []string{"render", "-f", "../../internal/offline/testdata/bin-packing.yaml"},
			wantCode: offline.ExitRendered, wantStdout: "kind: Deployment"},
		{name: "render refused", args: []string{"render", "-f", "../../internal/offline/testdata/unknown-field.yaml"},
			wantCode: offline.ExitRefused, wantStderr: "The API server would refuse"},
		{name: "render without a file", args: []string{"render"}, wantCode: offline.ExitUsage, wantStderr: "Usage: kubectl secondary-scheduler render"},
		{name: "no command", args: nil, wantCode: offline.ExitUsage, wantStderr: "Commands:"},
		{name: "help", args: []string{"--help"}, wantCode: 0, wantStdout: "render "},
		{name: "unknown command", args: []string{"apply"}, wantCode: offline.ExitUsage, wantStderr: `unknown command "apply"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run(context.Background(), tc.args, &stdout, &stderr)
			if code != tc.wantCode {
				t.Errorf("exit code %d, want %d; stderr:\n%s", code, tc.wantCode, stderr.String())
			}
			if !strings.Contains(stdout.String(), tc.wantStdout) {
				t.Errorf("stdout lacks %q:\n%s", tc.wantStdout, stdout.String())
			}
			if !strings.Contains(stderr.String(), tc.wantStderr) {
				t.Errorf("stderr lacks %q:\n%s", tc.wantStderr, stderr.String())
			}
		})
	}
}
