module amesh.test/hbone_go

go 1.19
