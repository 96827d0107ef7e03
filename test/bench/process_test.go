package main

import "testing"

func TestParseCPUSeconds(t *testing.T) {
	tests := []struct {
		name    string
		stat    string
		want    float64
		wantErr bool
	}{
		{
			name: "utime and stime in ticks",
			stat: "4242 (manager) S 1 4242 4242 0 -1 4194560 9123 0 0 0 1234 567 0 0 20 0 14 0 98765 1300000000 20000 18446744073709551615",
			want: 18.01,
		},
		{
			name: "a command name with spaces and parentheses",
			stat: "7 (my (odd) name) R 1 7 7 0 -1 0 0 0 0 0 100 50 0 0 20 0 1 0 5 100 10 0",
			want: 1.5,
		},
		{name: "no command name", stat: "7 manager R 1", wantErr: true},
		{name: "too short", stat: "7 (manager) R 1 7", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseCPUSeconds(tt.stat)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, want error %v", err, tt.wantErr)
			}
			if got != tt.want {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
}

func TestParseMemoryStatus(t *testing.T) {
	status := "Name:\tmanager\nVmPeak:\t 1300000 kB\nVmHWM:\t  113664 kB\nVmRSS:\t   75776 kB\n" +
		"RssAnon:\t   51200 kB\nRssFile:\t   24576 kB\nRssShmem:\t       0 kB\nThreads:\t14\n"
	got, err := parseMemoryStatus(status)
	if err != nil {
		t.Fatal(err)
	}
	if want := (memoryStatus{rss: 74 * mebibyte, peakRSS: 111 * mebibyte, anon: 50 * mebibyte, file: 24 * mebibyte}); got != want {
		t.Errorf("got %+v, want %+v", got, want)
	}
	for name, broken := range map[string]string{
		"no VmHWM":  "VmRSS:\t 75776 kB\n",
		"not in kB": "VmRSS:\t 75776 MB\nVmHWM:\t 1 kB\n",
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := parseMemoryStatus(broken); err == nil {
				t.Error("succeeded")
			}
		})
	}
}

func TestParseBusySeconds(t *testing.T) {
	tests := []struct {
		name    string
		stat    string
		want    float64
		wantErr bool
	}{
		{
			// user nice system idle iowait irq softirq steal guest guest_nice: idle and
			// iowait are not busy.
			name: "every time but idle and iowait",
			stat: "cpu  1000 200 300 999999 8888 40 60 100 0 0\ncpu0 500 100 150 500000 4444 20 30 50 0 0\n",
			want: 17,
		},
		{name: "a per-CPU line first", stat: "cpu0 1 2 3 4 5 6 7 8\n", wantErr: true},
		{name: "too few times", stat: "cpu 1 2 3 4\n", wantErr: true},
		{name: "not a number", stat: "cpu 1 2 x 4 5 6 7 8\n", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseBusySeconds(tt.stat)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, want error %v", err, tt.wantErr)
			}
			if got != tt.want {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
}
