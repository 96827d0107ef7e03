package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// process is a program the harness runs (the operator, podrunner), its output in a log.
type process struct {
	name, logPath string
	command       *exec.Cmd
	exited        chan struct{}
}

// startProcess starts args in a process group of its own, logging to dir/NAME.log
// (appended, so that restarts keep the earlier output).
func startProcess(dir, name string, args ...string) (*process, error) {
	p := &process{name: name, logPath: filepath.Join(dir, name+".log")}
	logFile, err := os.OpenFile(p.logPath, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return nil, err
	}
	p.command = exec.Command(args[0], args[1:]...)
	p.command.Stdout, p.command.Stderr = logFile, logFile
	p.command.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := p.command.Start(); err != nil {
		_ = logFile.Close()
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	p.exited = make(chan struct{})
	go func() { _ = p.command.Wait(); _ = logFile.Close(); close(p.exited) }()
	return p, nil
}

func (p *process) pid() int { return p.command.Process.Pid }

// stopGrace is how long a process has to end after SIGTERM.
const stopGrace = 30 * time.Second

// stop ends the process group with SIGTERM, then SIGKILL after stopGrace.
func (p *process) stop() {
	if p == nil {
		return
	}
	_ = syscall.Kill(-p.pid(), syscall.SIGTERM)
	select {
	case <-p.exited:
	case <-time.After(stopGrace):
		_ = syscall.Kill(-p.pid(), syscall.SIGKILL)
		<-p.exited
	}
}

// running is whether the process has not exited.
func (p *process) running() bool {
	select {
	case <-p.exited:
		return false
	default:
		return true
	}
}

// logContains is whether the process's log, from offset on, contains text.
func (p *process) logContains(offset int64, text string) bool {
	data, err := os.ReadFile(p.logPath)
	if err != nil || int64(len(data)) < offset {
		return false
	}
	return bytes.Contains(data[offset:], []byte(text))
}

func (p *process) logSize() int64 {
	info, err := os.Stat(p.logPath)
	if err != nil {
		return 0
	}
	return info.Size()
}

// clockTicks is the kernel's USER_HZ, in which /proc/PID/stat counts CPU time; 100 on
// every Linux architecture Go runs on.
const clockTicks = 100

// cpuSeconds is the CPU time (user and system) the process has used, from /proc/PID/stat.
func cpuSeconds(pid int) (float64, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	return parseCPUSeconds(string(data))
}

// parseCPUSeconds reads utime and stime (fields 14 and 15) of a /proc/PID/stat line. The
// command name, field 2, is in parentheses and may contain spaces, so fields are counted
// after its closing parenthesis.
func parseCPUSeconds(stat string) (float64, error) {
	closing := strings.LastIndexByte(stat, ')')
	if closing < 0 {
		return 0, errors.New("stat: no command name")
	}
	fields := strings.Fields(stat[closing+1:])
	// fields[0] is field 3 (state), so field N is fields[N-3].
	if len(fields) < 13 {
		return 0, fmt.Errorf("stat: %d fields after the command name", len(fields))
	}
	utime, err := strconv.ParseUint(fields[14-3], 10, 64)
	if err != nil {
		return 0, fmt.Errorf("stat utime: %w", err)
	}
	stime, err := strconv.ParseUint(fields[15-3], 10, 64)
	if err != nil {
		return 0, fmt.Errorf("stat stime: %w", err)
	}
	return float64(utime+stime) / clockTicks, nil
}

// memoryStatus is what /proc/PID/status says of a process's memory, in bytes: its
// resident set (VmRSS), the peak of it (VmHWM), and of the resident set the anonymous
// part (RssAnon: heap, stacks) and the file-backed part (RssFile: the binary's pages).
type memoryStatus struct {
	rss, peakRSS, anon, file float64
}

func readMemoryStatus(pid int) (memoryStatus, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return memoryStatus{}, err
	}
	return parseMemoryStatus(string(data))
}

func parseMemoryStatus(status string) (memoryStatus, error) {
	var memory memoryStatus
	fields := map[string]*float64{"VmRSS": &memory.rss, "VmHWM": &memory.peakRSS, "RssAnon": &memory.anon, "RssFile": &memory.file}
	found := map[string]bool{}
	scanner := bufio.NewScanner(strings.NewReader(status))
	for scanner.Scan() {
		key, value, ok := strings.Cut(scanner.Text(), ":")
		target, wanted := fields[key]
		if !ok || !wanted {
			continue
		}
		number, unit, ok := strings.Cut(strings.TrimSpace(value), " ")
		if !ok || unit != "kB" {
			return memoryStatus{}, fmt.Errorf("status %s: %q is not in kB", key, value)
		}
		kib, err := strconv.ParseFloat(number, 64)
		if err != nil {
			return memoryStatus{}, fmt.Errorf("status %s: %w", key, err)
		}
		*target = kib * 1024
		found[key] = true
	}
	if !found["VmRSS"] || !found["VmHWM"] {
		return memoryStatus{}, errors.New("status: VmRSS or VmHWM missing")
	}
	return memory, nil
}

const mebibyte = 1024 * 1024
