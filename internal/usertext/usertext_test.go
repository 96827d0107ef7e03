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
