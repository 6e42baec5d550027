module amesh.test/zds_go

go 1.19
