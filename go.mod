module github.com/ddrun/ddrun

go 1.26

require (
	github.com/vmihailenco/msgpack/v5 v5.4.1
	gonum.org/v1/gonum v0.17.0
)

require github.com/vmihailenco/tagparser/v2 v2.0.0 // indirect
