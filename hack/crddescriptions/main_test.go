package main

import "testing"

func TestReflow(t *testing.T) {
	tests := []struct {
		name, text, want string
	}{
		{"a paragraph becomes a line", "Affinity of the scheduler's pods.\nHighlyAvailable replicas are spread.", "Affinity of the scheduler's pods. HighlyAvailable replicas are spread."},
		{"paragraphs stay apart", "One\nline.\n\nTwo\nlines.", "One line.\n\nTwo lines."},
		{"list items keep their breaks", "Modes:\n- Enforce sets it\n  and labels\n- Audit labels\n1. first", "Modes:\n- Enforce sets it\n  and labels\n- Audit labels\n1. first"},
		{"one line is left alone", "Spec is the desired scheduler.", "Spec is the desired scheduler."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Reflow(tt.text); got != tt.want {
				t.Errorf("Reflow(%q) = %q, want %q", tt.text, got, tt.want)
			}
		})
	}
}
