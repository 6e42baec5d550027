module amesh.test/dns_go

go 1.19
