// swift-tools-version: 6.1
import PackageDescription

// The README's "Write a ViewModel" example as a package of its own, using Tether from this
// checkout. (The root package builds the same file as its `hello-tether` target, so CI compiles
// and runs it without building every dependency a second time.)
let package = Package(
    name: "hello-tether",
    platforms: [.macOS(.v14)],
    dependencies: [
        .package(name: "Tether", path: "../.."),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.13.0"),
    ],
    targets: [
        .executableTarget(
            name: "hello-tether",
            dependencies: [
                .product(name: "TetherServer", package: "Tether"),
                .product(name: "TetherDemos", package: "Tether"),
                .product(name: "TetherState", package: "Tether"),
                .product(name: "TetherBinding", package: "Tether"),
                .product(name: "TetherContract", package: "Tether"),
                .product(name: "TetherContractMacro", package: "Tether"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
    ]
)
