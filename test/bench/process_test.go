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
