module blpp

go 1.26.8

require (
	github.com/spf13/pflag v1.0.10
	golang.org/x/arch v0.32.0
)
