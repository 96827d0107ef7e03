package main

import (
	"fmt"
	"strings"
	"testing"
)

// A failed container's message is the tail of its output, as a kubelet takes it with
// FallbackToLogsOnError: the last 80 lines, at most 2 KiB of them.
func TestLogTail(t *testing.T) {
	var many strings.Builder
	for i := range 100 {
		fmt.Fprintf(&many, "line %d\n", i)
	}
	long := strings.Repeat("x", 3000) + "\nE1125 run.go:72] \"command failed\" err=\"couldn't create scheduler: plugin \\\"ImageLocalty\\\" does not exist\"\n"
	tests := []struct {
		name, output, want string
	}{
		{name: "short output, whole", output: "starting\nerror: bad flag\n", want: "starting\nerror: bad flag"},
		{name: "the last 80 lines", output: many.String(), want: strings.Join(func() []string {
			var lines []string
			for i := 20; i < 100; i++ {
				lines = append(lines, fmt.Sprintf("line %d", i))
			}
			return lines
		}(), "\n")},
		{name: "at most 2 KiB, ending with the error", output: long, want: long[len(long)-1-2048 : len(long)-1]},
		{name: "no output", output: "", want: ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := logTail([]byte(tt.output)); got != tt.want {
				t.Errorf("logTail = %q, want %q", got, tt.want)
			}
		})
	}
}
