module github.com/blpp/blpp

go 1.26.8

require (
	github.com/google/pprof v0.0.0-20260906184651-6331bc6350fe
	github.com/ianlancetaylor/demangle v0.0.0-20260724033716-83e58baca724
	github.com/spf13/pflag v1.0.10
	golang.org/x/arch v0.32.0
)
