package controllers

import (
	"testing"

	"github.com/go-logr/logr/funcr"

	v1 "github.com/secondary-scheduler/secondary-scheduler-operator/api/v1"
)

func TestWithOperatorLogLevel(t *testing.T) {
	tests := []struct {
		level     v1.LogLevel
		wantShown []int // of the verbosities 0 to 8, with the operator at V(0)
	}{
		{"", []int{0}},
		{v1.Normal, []int{0}},
		{v1.Debug, []int{0, 1, 2}},
		{v1.Trace, []int{0, 1, 2, 3, 4}},
		{v1.TraceAll, []int{0, 1, 2, 3, 4, 5, 6}},
	}
	for _, tt := range tests {
		t.Run(string(tt.level), func(t *testing.T) {
			written := 0
			base := funcr.New(func(_, _ string) { written++ }, funcr.Options{Verbosity: 0})
			log := withOperatorLogLevel(base, tt.level).WithName("reconcile").WithValues("k", "v")
			var shown []int
			for v := 0; v <= 8; v++ {
				before := written
				log.V(v).Info("message")
				if written > before {
					shown = append(shown, v)
				}
			}
			if len(shown) != len(tt.wantShown) {
				t.Fatalf("shown verbosities %v, want %v", shown, tt.wantShown)
			}
			for i := range shown {
				if shown[i] != tt.wantShown[i] {
					t.Fatalf("shown verbosities %v, want %v", shown, tt.wantShown)
				}
			}
		})
	}
}
