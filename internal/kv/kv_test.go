package kv

import (
	"errors"
	"strings"
	"testing"
)

func TestCheckKey(t *testing.T) {
	cases := []struct {
		key  string
		want error
	}{
		{"k", nil},
		{"key with spaces & symbols/?=", nil},
		{"ключ", nil},
		{strings.Repeat("a", MaxKeyBytes), nil},
		{"", ErrKeyEmpty},
		{strings.Repeat("a", MaxKeyBytes+1), ErrKeyTooLong},
		{"a\nb", ErrKeyNewline},
		{"\xff", ErrKeyNotUTF8},
	}
	for _, c := range cases {
		if got := CheckKey(c.key); !errors.Is(got, c.want) {
			t.Errorf("CheckKey(%q) = %v, want %v", c.key, got, c.want)
		}
	}
}

func TestCheckMaxValue(t *testing.T) {
	for _, n := range []int{0, 1, DefaultMaxValueBytes, MaxValueLimit} {
		if err := CheckMaxValue(n); err != nil {
			t.Errorf("CheckMaxValue(%d) = %v, want nil", n, err)
		}
	}
	for _, n := range []int{-1, MaxValueLimit + 1} {
		if CheckMaxValue(n) == nil {
			t.Errorf("CheckMaxValue(%d) = nil, want an error", n)
		}
	}
}
