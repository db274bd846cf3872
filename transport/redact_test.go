package transport

import "testing"

func TestRedact(t *testing.T) {
	cases := []struct {
		in      string
		secrets []string
		want    string
	}{
		{"nats://127.0.0.1:4222", nil, "nats://127.0.0.1:4222"},
		{"nats://alice:s3cret@h:4222", nil, "nats://alice:xxxxx@h:4222"},
		{"nats://tok3n@h:4222", nil, "nats://xxxxx@h:4222"},
		{"nats://a:p1@h1:4222, tls://b:p2@h2", nil, "nats://a:xxxxx@h1:4222, tls://b:xxxxx@h2"},
		{"nats://alice:@h", nil, "nats://alice:xxxxx@h"},
		{`parse "nats://alice:s3cret@h:x": invalid port ":x" after host`, nil, `parse "nats://alice:xxxxx@h:x": invalid port ":x" after host`},
		{"authorization violation for hunter22", []string{"hunter22"}, "authorization violation for xxxxx"},
		{"short secrets stay: abc", []string{"abc"}, "short secrets stay: abc"},
		{"empty secret", []string{""}, "empty secret"},
		{"mail alice@example.com", nil, "mail alice@example.com"},
		{"nats://h:4222/path@x", nil, "nats://h:4222/path@x"},
	}
	for _, c := range cases {
		if got := Redact(c.in, c.secrets...); got != c.want {
			t.Errorf("Redact(%q, %q) = %q, want %q", c.in, c.secrets, got, c.want)
		}
	}
}
