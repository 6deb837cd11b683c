package persist

import (
	"context"
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/toolhost/toolhost/internal/testutil"
)

// processCPU is the CPU time this process has used: reported per op
// (cpu-ns/op) next to wall time, which on a shared machine mostly measures
// the disk's and the other processes' load.
func processCPU() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkUpdateTodoItem is update_todo_item on a todolist of 10 and 500
// steps with descriptions of typical length (100 characters), and of the
// longest allowed (2,000): the handler with its real sandbox door, on disk,
// with an in-memory event sink.
func BenchmarkUpdateTodoItem(b *testing.B) {
	for _, desc := range []int{100, 2000} {
		for _, n := range []int{10, 500} {
			b.Run(fmt.Sprintf("steps=%d/desc=%d", n, desc), func(b *testing.B) {
				rec := &recorder{}
				c := testutil.NewCtx(b, testutil.CtxOptions{Agent: "pm", Events: rec, Timeline: rec})
				items := make([]TodoItemInput, n)
				for i := range items {
					items[i] = TodoItemInput{ID: fmt.Sprintf("step-%03d", i+1), Description: strings.Repeat("d", desc)}
					if i > 0 {
						items[i].DependsOn = []string{items[i-1].ID}
					}
				}
				if _, err := writeTodolist(context.Background(), c, WriteTodolistInput{Items: items}); err != nil {
					b.Fatal(err)
				}
				cpu0, ops := processCPU(), 0
				for i := 0; b.Loop(); i++ {
					st := []string{"todo", "blocked"}[i%2]
					out, err := updateTodoItem(context.Background(), c, UpdateTodoItemInput{ID: items[n/2].ID, Status: st, Note: "n"})
					if err != nil || !out.OK {
						b.Fatal(err, out.Reason)
					}
					ops++
				}
				b.ReportMetric(float64((processCPU()-cpu0).Nanoseconds())/float64(ops), "cpu-ns/op")
			})
		}
	}
}
