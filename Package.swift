// swift-tools-version: 6.1
import PackageDescription

// One module per part (docs/ARCHITECTURE.md). Libraries live in Sources/ (server side and shared)
// and Clients/ (client side); executables are thin shells over them.
let package = Package(
    name: "Tether",
    platforms: [.macOS(.v14)],
    products: [
        .library(name: "TetherBinding", targets: ["TetherBinding"]),
        .library(name: "TetherJSON", targets: ["TetherJSON"]),
        .library(name: "TetherState", targets: ["TetherState"]),
        .library(name: "TetherProtocol", targets: ["TetherProtocol"]),
        .library(name: "TetherTUI", targets: ["TetherTUI"]),
        .library(name: "TetherClient", targets: ["TetherClient"]),
        .library(name: "TetherServer", targets: ["TetherServer"]),
        .executable(name: "tetherd", targets: ["tetherd"]),
        .executable(name: "tether", targets: ["tether"]),
        .executable(name: "tether-load", targets: ["tether-load"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-collections", from: "1.6.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus", from: "2.4.1"),
        // tether-load's latency percentiles: HdrHistogram keeps p50...p99.9 and max over millions
        // of samples in fixed memory (a few hundred KiB), with bounded relative error.
        .package(url: "https://github.com/HdrHistogram/hdrhistogram-swift", from: "0.2.0"),
    ],
    targets: [
        // Binding core: Observable<T>, operators, observable collections. Plain Swift.
        .target(name: "TetherBinding"),

        // JSON: value, parser, writer, JSON Pointer, JSON Patch, the Codable bridge. Plain Swift.
        .target(name: "TetherJSON"),

        // The ViewModel API: observables published as a JSON document, diffs as JSON Patch.
        .target(name: "TetherState", dependencies: ["TetherBinding", "TetherJSON"]),

        // Wire protocol v1: message types and their codec.
        .target(name: "TetherProtocol", dependencies: ["TetherJSON"]),

        // The demo ViewModels, written with the public ViewModel API only.
        .target(name: "TetherDemos", dependencies: ["TetherState", "TetherBinding", "TetherJSON"]),

        // Transport: libwebsockets (system library + shim header) wrapped for server and client.
        .systemLibrary(name: "CLibWebSockets", pkgConfig: "libwebsockets", providers: [.apt(["libwebsockets-dev", "libssl-dev"])]),
        .target(
            name: "TetherTransport",
            dependencies: ["CLibWebSockets", .product(name: "Logging", package: "swift-log")]
        ),

        // OpenSSL's libcrypto (system library) for HMAC-SHA256 access tokens.
        .systemLibrary(name: "COpenSSL", pkgConfig: "libcrypto", providers: [.apt(["libssl-dev"])]),

        // NATS C client (system library, Debian libnats-dev) and its Swift wrapper for the cluster:
        // connections, request/reply, JetStream streams and KV.
        .systemLibrary(name: "CNATS", pkgConfig: "libnats", providers: [.apt(["libnats-dev"])]),
        .target(
            name: "TetherNATS",
            dependencies: ["CNATS", "TetherJSON", .product(name: "HeapModule", package: "swift-collections")]
        ),

        // SQLite (system library) for durable rooms.
        .systemLibrary(name: "CSQLite", providers: [.apt(["libsqlite3-dev"])]),

        // The server: rooms, sessions, fan-out, metrics. `tetherd` is a thin shell over it.
        .target(
            name: "TetherServer",
            dependencies: [
                "TetherJSON", "TetherState", "TetherProtocol", "TetherTransport", "CSQLite", "COpenSSL",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "DequeModule", package: "swift-collections"),
                .product(name: "Prometheus", package: "swift-prometheus"),
            ]
        ),
        .executableTarget(
            name: "tetherd",
            dependencies: [
                "TetherServer", "TetherDemos", "TetherTransport",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),

        // The client library: mirrors of rooms as observables, reconnect and resume.
        .target(
            name: "TetherClient",
            dependencies: [
                "TetherBinding", "TetherJSON", "TetherProtocol", "TetherTransport",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "DequeModule", package: "swift-collections"),
            ],
            path: "Clients/TetherClient"
        ),

        // Terminal widget toolkit: cell buffer, widgets, diffing renderer, test backend.
        .target(name: "TetherTUI", path: "Clients/TetherTUI"),

        // The terminal client: one screen per demo room, a live inspector, `watch` and `send`.
        .executableTarget(
            name: "tether",
            dependencies: [
                "TetherClient", "TetherTUI", "TetherBinding", "TetherJSON", "TetherProtocol",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ],
            path: "Clients/tether"
        ),

        // The load generator: thousands of connections straight on the transport (one lws context
        // and thread each), frames checked with a byte scanner. `Scripts/loadtest.sh` drives it.
        .executableTarget(
            name: "tether-load",
            dependencies: [
                "TetherTransport", "TetherProtocol", "TetherJSON",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Histogram", package: "hdrhistogram-swift"),
            ],
            path: "Clients/tether-load"
        ),

        // Benchmarks (release mode): `swift run -c release tether-bench`.
        .executableTarget(
            name: "tether-bench",
            dependencies: ["TetherBinding", "TetherJSON", "TetherState", "TetherProtocol"],
            path: "Benchmarks/tether-bench"
        ),

        // Test utilities shared by the test targets (seeded generators, random JSON, ...).
        .target(name: "TetherTestSupport", dependencies: ["TetherJSON", "TetherTransport"], path: "Tests/TetherTestSupport"),

        .testTarget(name: "TetherBindingTests", dependencies: ["TetherBinding"]),
        .testTarget(name: "TetherJSONTests", dependencies: ["TetherJSON", "TetherTestSupport"]),
        .testTarget(name: "TetherStateTests", dependencies: ["TetherState", "TetherJSON", "TetherBinding", "TetherTestSupport"]),
        .testTarget(name: "TetherProtocolTests", dependencies: ["TetherProtocol", "TetherJSON", "TetherTestSupport"]),
        .testTarget(name: "TetherDemosTests", dependencies: ["TetherDemos", "TetherState", "TetherJSON"]),
        .testTarget(name: "TetherTransportTests", dependencies: ["TetherTransport", "TetherTestSupport"]),
        .testTarget(name: "TetherClientTests", dependencies: ["TetherClient", "TetherBinding", "TetherJSON", "TetherTestSupport"]),
        .testTarget(name: "TetherServerTests", dependencies: ["TetherServer", "TetherProtocol", "TetherJSON", "TetherState", "TetherTestSupport"]),
        .testTarget(
            name: "EndToEndTests",
            dependencies: ["TetherClient", "TetherProtocol", "TetherJSON", "TetherBinding", "TetherTestSupport"]
        ),
        .testTarget(name: "TetherTUITests", dependencies: ["TetherTUI"]),
        // Against real nats-server processes (1 or 3) started by TetherTestSupport's NATSCluster.
        .testTarget(name: "TetherNATSTests", dependencies: ["TetherNATS", "TetherJSON", "TetherTestSupport"]),
        // `tether` end to end under tmux against a real tetherd, plus its screens on a TestBackend.
        .testTarget(
            name: "TerminalClientTests",
            dependencies: ["tether", "TetherClient", "TetherTUI", "TetherJSON", "TetherTestSupport"]
        ),
    ]
)
