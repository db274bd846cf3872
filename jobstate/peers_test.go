package jobstate

import (
	"maps"
	"strings"
	"testing"
)

func TestParsePeers(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    map[string]string
		wantErr string // substring of the error; empty means no error
	}{
		{name: "three", in: "a=127.0.0.1:7001,b=127.0.0.1:7002,c=127.0.0.1:7003",
			want: map[string]string{"a": "127.0.0.1:7001", "b": "127.0.0.1:7002", "c": "127.0.0.1:7003"}},
		{name: "one", in: "solo=host.example:9000", want: map[string]string{"solo": "host.example:9000"}},
		{name: "spaces", in: " a = 10.0.0.1:1 , b=[::1]:2 ", want: map[string]string{"a": "10.0.0.1:1", "b": "[::1]:2"}},
		{name: "empty", in: "", wantErr: "empty list"},
		{name: "blank", in: "  ", wantErr: "empty list"},
		{name: "trailing comma", in: "a=h:1,", wantErr: "item 2 is empty"},
		{name: "empty middle item", in: "a=h:1,,b=h:2", wantErr: "item 2 is empty"},
		{name: "no equals", in: "a=h:1,bh:2", wantErr: `item "bh:2": want id=host:port`},
		{name: "empty id", in: "=h:1", wantErr: `item "=h:1": empty id`},
		{name: "empty address", in: "a=", wantErr: `item "a=": empty address`},
		{name: "no port", in: "a=h", wantErr: `item "a=h": address "h": missing port`},
		{name: "empty host", in: "a=:7001", wantErr: "empty host"},
		{name: "port not a number", in: "a=h:x", wantErr: `port "x" is not in 1..65535`},
		{name: "port zero", in: "a=h:0", wantErr: `port "0"`},
		{name: "port too big", in: "a=h:65536", wantErr: `port "65536"`},
		{name: "duplicate id", in: "a=h:1,a=h:2", wantErr: `item "a=h:2": id "a" given twice`},
		{name: "duplicate address", in: "a=h:1,b=h:1", wantErr: `item "b=h:1": address h:1 already used by "a"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParsePeers(tt.in)
			if tt.wantErr != "" {
				if err == nil {
					t.Fatalf("ParsePeers(%q) = %v, want error containing %q", tt.in, got, tt.wantErr)
				}
				if !strings.Contains(err.Error(), tt.wantErr) || strings.Contains(err.Error(), "\n") {
					t.Fatalf("ParsePeers(%q) error %q, want one line containing %q", tt.in, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParsePeers(%q): %v", tt.in, err)
			}
			if !maps.Equal(got, tt.want) {
				t.Fatalf("ParsePeers(%q) = %v, want %v", tt.in, got, tt.want)
			}
		})
	}
}
