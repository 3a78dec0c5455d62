package swarm

// Version is the build of swarm: `make build` stamps it with
// -ldflags "-X github.com/swarmllm/swarm/swarm.Version=$(git describe
// --tags --always --dirty)"; "dev" for a build without the stamp (go run,
// go test, plain go build). `swarm --version` prints it, and servers
// advertise it (ServerInfo.Version).
var Version = "dev"
