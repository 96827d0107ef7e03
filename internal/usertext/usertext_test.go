package usertext

import "testing"

func TestCut(t *testing.T) {
	tests := []struct {
		name, text string
		limit      int
		want       string
	}{
		{"short stays", "abc", 5, "abc"},
		{"exactly the limit stays", "abcde", 5, "abcde"},
		{"long is cut and marked", "abcdef", 5, "abcde..."},
		// "é" is two bytes: a cut through it drops the half rune rather than keep it.
		{"never half a rune", "abcdé", 5, "abcd..."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Cut(tt.text, tt.limit); got != tt.want {
				t.Errorf("Cut(%q, %d) = %q, want %q", tt.text, tt.limit, got, tt.want)
			}
		})
	}
}

func TestNearest(t *testing.T) {
	names := []string{"bin-packing", "load-aware", "provided", "trimaran"}
	tests := []struct {
		name, want string
	}{
		{"provdied", "provided"}, // two letters swapped: 2 edits
		{"bin-pakcing", "bin-packing"},
		{"Load-Aware", "load-aware"}, // case does not count
		{"gang", ""},                 // nothing near
		{"trimaran-2", "trimaran"},   // 2 edits of 10 letters
		{"x", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Nearest(tt.name, names); got != tt.want {
				t.Errorf("Nearest(%q) = %q, want %q", tt.name, got, tt.want)
			}
		})
	}
	// Ties go to the first in byte order, whatever the candidates' order.
	if a, b := Nearest("ab", []string{"ac", "aa"}), Nearest("ab", []string{"aa", "ac"}); a != "aa" || b != "aa" {
		t.Errorf("a tie gave %q and %q, want aa both times", a, b)
	}
}
