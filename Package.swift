// swift-tools-version: 6.2
import CompilerPluginSupport
import PackageDescription

// One module per part (docs/ARCHITECTURE.md). Libraries live in Sources/ (server side and shared)
// and Clients/ (client side); executables are thin shells over them.
let package = Package(
    name: "Tether",
    platforms: [.macOS(.v14)],
    products: [
        .library(name: "TetherBinding", targets: ["TetherBinding"]),
        .library(name: "TetherJSON", targets: ["TetherJSON"]),
        .library(name: "TetherContract", targets: ["TetherContract"]),
        .library(name: "TetherContractMacro", targets: ["TetherContractMacro"]),
        .library(name: "TetherState", targets: ["TetherState"]),
        .library(name: "TetherProtocol", targets: ["TetherProtocol"]),
        .library(name: "TetherTUI", targets: ["TetherTUI"]),
        .library(name: "TetherClient", targets: ["TetherClient"]),
        .library(name: "TetherServer", targets: ["TetherServer"]),
        .library(name: "TetherDemoContracts", targets: ["TetherDemoContracts"]),
        .library(name: "TetherDemos", targets: ["TetherDemos"]),
        .library(name: "TetherTesting", targets: ["TetherTesting"]),
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
        // The calculator demo computes exactly with any number of digits (Decimal silently rounds past 38).
        .package(url: "https://github.com/attaswift/BigInt", from: "6.0.1"),
        // tetherd runs as a Service in a ServiceGroup: graceful shutdown on signals, beside other services.
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.13.0"),
        // Settings from flags, environment variables and a config file, in that order of precedence.
        .package(url: "https://github.com/apple/swift-configuration", from: "1.4.0"),
        // The config file's parser (YAML, which also reads JSON), so unknown keys can be named.
        .package(url: "https://github.com/jpsim/Yams", from: "6.2.2"),
        // The @Contract macro (docs/DESIGN.md, "Typed contracts"): one declaration, the glue generated.
        .package(url: "https://github.com/swiftlang/swift-syntax", from: "603.0.1"),
        // Access tokens (JWT): RS256/ES256/EdDSA/HS256 signatures and JWKS keys from a maintained
        // library instead of hand-written JWT code (docs/DESIGN.md, "Access tokens").
        .package(url: "https://github.com/vapor/jwt-kit", from: "5.8.0"),
        // HS256 checked synchronously on the socket thread (jwt-kit's HMAC key is behind an actor);
        // already built for jwt-kit, the range is jwt-kit's.
        .package(url: "https://github.com/apple/swift-crypto", "4.1.0"..<"6.0.0"),
    ],
    targets: [
        // Writes WebAssets.swift (Clients/web as string literals) for TetherServer with Scripts/embed-web.sh.
        .plugin(name: "EmbedWeb", capability: .buildTool(), path: "Plugins/EmbedWeb"),

        // Binding core: Observable<T>, operators, observable collections. Plain Swift.
        .target(name: "TetherBinding"),

        // JSON: value, parser, writer, JSON Pointer, JSON Patch, the Codable bridge. Plain Swift.
        .target(name: "TetherJSON"),

        // Typed contracts: a ViewModel's state, actions and errors declared once for server and
        // clients, with their JSON Schema and fingerprint (OpenSSL's SHA-256) for `describe`.
        .target(name: "TetherContract", dependencies: ["TetherJSON", "TetherBinding", "COpenSSL"]),

        // The @Contract macro's declaration, apart from the runtime so that only a package that
        // imports it builds swift-syntax (TetherContract and TetherState work without it).
        .target(name: "TetherContractMacro", dependencies: ["TetherContract", "TetherContractMacros"]),

        // The @Contract macro's implementation, a library so that its tests need not depend on the
        // macro target: a test target that does is built for the host with every other test target
        // (the whole package twice, and `@testable import tether` fails there).
        .target(
            name: "TetherContractMacroKit",
            dependencies: [
                .product(name: "SwiftSyntax", package: "swift-syntax"),
                .product(name: "SwiftDiagnostics", package: "swift-syntax"),
                .product(name: "SwiftSyntaxMacros", package: "swift-syntax"),
            ]
        ),
        // The compiler plugin that runs it.
        .macro(
            name: "TetherContractMacros",
            dependencies: [
                "TetherContractMacroKit",
                .product(name: "SwiftSyntax", package: "swift-syntax"),
                .product(name: "SwiftSyntaxMacros", package: "swift-syntax"),
                .product(name: "SwiftCompilerPlugin", package: "swift-syntax"),
            ]
        ),

        // The ViewModel API: observables published as a JSON document, diffs as JSON Patch.
        .target(name: "TetherState", dependencies: ["TetherBinding", "TetherJSON", "TetherContract"]),

        // Wire protocol v1: message types and their codec.
        .target(name: "TetherProtocol", dependencies: ["TetherJSON"]),

        // The demos' contracts: what their ViewModels (TetherDemos) and the terminal client share.
        .target(name: "TetherDemoContracts", dependencies: ["TetherContract", "TetherContractMacro", "TetherJSON"]),

        // The demo ViewModels, written with the public ViewModel API only.
        .target(
            name: "TetherDemos",
            dependencies: ["TetherDemoContracts", "TetherContract", "TetherState", "TetherBinding", "TetherJSON", .product(name: "BigInt", package: "BigInt")]
        ),

        // Transport: libwebsockets (system library + shim header) wrapped for server and client.
        .systemLibrary(name: "CLibWebSockets", pkgConfig: "libwebsockets", providers: [.apt(["libwebsockets-dev", "libssl-dev"])]),
        .target(
            name: "TetherTransport",
            dependencies: ["CLibWebSockets", .product(name: "Logging", package: "swift-log")]
        ),

        // OpenSSL's libcrypto (system library): the contracts' SHA-256 fingerprints, webhook signatures.
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
                "TetherBinding", "TetherJSON", "TetherState", "TetherProtocol", "TetherTransport", "TetherNATS", "CSQLite", "COpenSSL",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "DequeModule", package: "swift-collections"),
                .product(name: "OrderedCollections", package: "swift-collections"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Configuration", package: "swift-configuration"),
                .product(name: "Yams", package: "Yams"),
                .product(name: "JWTKit", package: "jwt-kit"),
                .product(name: "Crypto", package: "swift-crypto"),
            ],
            // FoundationNetworking (the NATS servers' /varz) is libcurl underneath: a build with
            // --static-swift-stdlib must name it (Debian libcurl4-openssl-dev).
            linkerSettings: [.linkedLibrary("curl", .when(platforms: [.linux]))],
            // Clients/web compiled in as WebAssets.swift, generated at each build (docs/DESIGN.md).
            plugins: ["EmbedWeb"]
        ),
        .executableTarget(
            name: "tetherd",
            dependencies: [
                "TetherServer", "TetherDemos",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
            ]
        ),

        // The README's "Write a ViewModel" example (also a package of its own in Examples/hello-tether):
        // built here so CI compiles and starts it without resolving and building dependencies twice.
        .executableTarget(
            name: "hello-tether",
            dependencies: [
                "TetherServer", "TetherDemos", "TetherState", "TetherBinding", "TetherContract", "TetherContractMacro",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            path: "Examples/hello-tether/Sources/hello-tether"
        ),

        // Testing Tether apps: TestRoom asserts what one action changed in a ViewModel; TestServer
        // runs the server core in process (in-memory connections, virtual clock).
        .target(
            name: "TetherTesting",
            dependencies: [
                "TetherServer", "TetherState", "TetherContract", "TetherJSON", "TetherProtocol",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "DequeModule", package: "swift-collections"),
            ]
        ),

        // The client library: mirrors of rooms as observables, reconnect and resume.
        .target(
            name: "TetherClient",
            dependencies: [
                "TetherBinding", "TetherJSON", "TetherProtocol", "TetherTransport", "TetherContract",
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
                "TetherClient", "TetherTUI", "TetherBinding", "TetherJSON", "TetherProtocol", "TetherContract",
                "TetherDemoContracts",
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
        .testTarget(name: "TetherContractTests", dependencies: ["TetherContract", "TetherJSON", "TetherBinding"]),
        .testTarget(
            name: "TetherContractMacroTests",
            dependencies: [
                "TetherContractMacroKit",
                // The generic variant reports through a handler: the tests use swift-testing, not XCTest.
                .product(name: "SwiftSyntaxMacrosGenericTestSupport", package: "swift-syntax"),
                .product(name: "SwiftSyntaxMacroExpansion", package: "swift-syntax"),
                .product(name: "SwiftSyntaxMacros", package: "swift-syntax"),
            ]
        ),
        .testTarget(name: "TetherStateTests", dependencies: ["TetherState", "TetherContract", "TetherContractMacro", "TetherJSON", "TetherBinding", "TetherTestSupport"]),
        .testTarget(name: "TetherProtocolTests", dependencies: ["TetherProtocol", "TetherJSON", "TetherTestSupport"]),
        .testTarget(name: "TetherDemosTests", dependencies: ["TetherDemos", "TetherDemoContracts", "TetherContract", "TetherState", "TetherJSON", "TetherBinding", "TetherTesting"]),
        .testTarget(name: "TetherTransportTests", dependencies: ["TetherTransport", "TetherTestSupport"]),
        // The typed rooms run against the demo counter on an in-process server (TetherServer, TetherDemos).
        .testTarget(
            name: "TetherClientTests",
            dependencies: [
                "TetherClient", "TetherBinding", "TetherJSON", "TetherProtocol", "TetherContract", "TetherTestSupport",
                "TetherServer", "TetherDemos", "TetherDemoContracts", .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .testTarget(
            name: "TetherServerTests",
            dependencies: [
                "TetherServer", "TetherTesting", "TetherDemos", "TetherDemoContracts", "TetherProtocol", "TetherJSON", "TetherState", "TetherContract",
                "TetherBinding", "TetherTestSupport",
                // TokenVerifierTests make an identity provider's keys and tokens in process.
                .product(name: "JWTKit", package: "jwt-kit"), .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "CryptoExtras", package: "swift-crypto"),
            ]
        ),
        .testTarget(
            name: "EndToEndTests",
            // TetherDemos, TetherTesting: exported histories replayed against the demos' code (ReplayTests).
            dependencies: ["TetherClient", "TetherProtocol", "TetherJSON", "TetherBinding", "TetherTransport", "TetherServer", "TetherTestSupport",
                           "TetherDemos", "TetherDemoContracts", "TetherContract", "TetherState", "TetherTesting"]
        ),
        .testTarget(name: "TetherTUITests", dependencies: ["TetherTUI", "TetherTestSupport"]),
        // Against real nats-server processes (1 or 3) started by TetherTestSupport's NATSCluster.
        .testTarget(name: "TetherNATSTests", dependencies: ["TetherNATS", "TetherJSON", "TetherTestSupport"]),
        // `tether` end to end under tmux against a real tetherd, plus its screens on a TestBackend.
        .testTarget(
            name: "TerminalClientTests",
            dependencies: ["tether", "TetherClient", "TetherTUI", "TetherJSON", "TetherTestSupport"]
        ),
    ]
)

// A warning in our own code fails the build (a warning is often a bug: one in tether-load hid a
// check that could never fail). Packages we depend on are not affected.
for target in package.targets where target.type != .system && target.type != .plugin {
    target.swiftSettings = (target.swiftSettings ?? []) + [.treatAllWarnings(as: .error)]
}
