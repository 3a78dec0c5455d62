package client

// DialWebsocket exposes the default Dialer to the external tests.
var DialWebsocket = dialWebsocket
