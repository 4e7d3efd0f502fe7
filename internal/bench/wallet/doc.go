// Package wallet is the wallet/social load scenario, `surge bench
// wallet`: ghz's shape, one gRPC-style call in a closed loop by logged-in
// users with friends, funds, history and chat.
package wallet
