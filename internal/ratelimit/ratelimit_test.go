package ratelimit

import (
	"sync"
	"testing"
	"time"
)

func TestRepeatsAdmitsOncePerInterval(t *testing.T) {
	now := time.Unix(0, 0)
	r := Repeats[string]{Every: 10 * time.Second, Now: func() time.Time { return now }}
	if n, ok := r.Admit("a"); !ok || n != 0 {
		t.Fatalf("first: %d, %v", n, ok)
	}
	for range 5 {
		now = now.Add(time.Second)
		if _, ok := r.Admit("a"); ok {
			t.Fatal("a repeat within the interval was admitted")
		}
	}
	if n, ok := r.Admit("b"); !ok || n != 0 {
		t.Fatalf("another kind: %d, %v", n, ok)
	}
	now = now.Add(5 * time.Second) // 10 s after the first a
	if n, ok := r.Admit("a"); !ok || n != 5 {
		t.Fatalf("after the interval: %d, %v; want 5 left out", n, ok)
	}
	if _, ok := r.Admit("a"); ok {
		t.Fatal("the interval did not start again")
	}
}

func TestRepeatsForgetsPastMaxKeys(t *testing.T) {
	r := Repeats[int]{Every: time.Hour, MaxKeys: 2}
	r.Admit(1)
	r.Admit(2)
	r.Admit(3) // memory starts afresh
	if _, ok := r.Admit(1); !ok {
		t.Error("a forgotten kind was not admitted again")
	}
}

func TestRepeatsConcurrent(t *testing.T) {
	r := Repeats[int]{Every: time.Hour}
	var wg sync.WaitGroup
	var mu sync.Mutex
	admitted := 0
	for range 8 {
		wg.Go(func() {
			for range 100 {
				if _, ok := r.Admit(7); ok {
					mu.Lock()
					admitted++
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	if admitted != 1 {
		t.Errorf("%d admitted, want 1", admitted)
	}
}
