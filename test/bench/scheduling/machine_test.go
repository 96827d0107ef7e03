package scheduling

import "testing"

func TestParseCPUTimes(t *testing.T) {
	tests := []struct {
		name              string
		stat              string
		wantBusy, wantAll uint64
		wantErr           bool
	}{
		{
			name:     "a machine's",
			stat:     "cpu  2799863 0 678963 3120528 54440 0 58602 32012 0 0\ncpu0 1 2 3 4 5 6 7 8 0 0\n",
			wantBusy: 2799863 + 678963 + 58602 + 32012, wantAll: 2799863 + 678963 + 3120528 + 54440 + 58602 + 32012,
		},
		{name: "guest fields are not counted twice", stat: "cpu 10 0 0 90 0 0 0 0 5 5\n", wantBusy: 10, wantAll: 100},
		{name: "no steal field (old kernels)", stat: "cpu 10 0 0 90 0 0 0\n", wantErr: true},
		{name: "not the cpu line", stat: "intr 1 2 3 4 5 6 7 8 9\n", wantErr: true},
		{name: "not a number", stat: "cpu 10 0 x 90 0 0 0 0 0 0\n", wantErr: true},
		{name: "empty", stat: "", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			busy, total, err := parseCPUTimes([]byte(tt.stat))
			if (err != nil) != tt.wantErr {
				t.Fatalf("error = %v, want one: %v", err, tt.wantErr)
			}
			if busy != tt.wantBusy || total != tt.wantAll {
				t.Errorf("parseCPUTimes = %d busy of %d, want %d of %d", busy, total, tt.wantBusy, tt.wantAll)
			}
		})
	}
}
