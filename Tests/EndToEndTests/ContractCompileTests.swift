import Foundation
import Testing
import TetherTestSupport

/// A contract shared by a ViewModel and a Swift client is checked by the compiler on both sides:
/// a member renamed in the contract, or an argument of the wrong type, stops the client from
/// compiling. Each program is type-checked by `swiftc` against the modules this build made
/// (with the @Contract macro's plugin), as a package of the user's would be.
@Suite("Typed contracts: what does not compile")
struct ContractCompileTests {
    static func contract(member: String) -> String {
        """
        import TetherContract
        import TetherContractMacro

        @Contract("counter")
        enum CounterContract {
            struct State: Codable, Sendable, Equatable {
                var \(member): Int = 0
            }
            protocol Actions {
                func increment(by: Int?) throws
            }
        }

        """
    }

    static let server = """
        import TetherBinding
        import TetherState

        final class Counter: ViewModel, CounterContract.Implementation {
            let count = Observable(0)
            init(context: ViewModelContext) {}
            static let actions = ActionTable(CounterContract.binding(Counter.self))
            func increment(by: Int?) throws { count.value += by ?? 1 }
        }

        """

    static func client(increment: String = ".init(by: 2)") -> String {
        """
        import TetherBinding
        import TetherClient

        @MainActor
        func use(_ client: TetherClient) async throws -> ReadOnlyObservable<Int> {
            let counter = client.room(CounterContract.self)
            try await counter.increment(\(increment), predict: { $0.count += 2 })
            return counter.count
        }

        """
    }

    /// `swiftc -typecheck` of `files` as one module; its status and diagnostics.
    static func typecheck(_ files: [String: String]) throws -> (status: Int32, output: String) {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("tether-compile-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        var paths: [String] = []
        for (name, text) in files.sorted(by: { $0.key < $1.key }) {
            let path = directory.appendingPathComponent(name).path
            try text.write(toFile: path, atomically: true, encoding: .utf8)
            paths.append(path)
        }
        let products = Daemon.productsDirectory.path
        let sources = Repository.root.appendingPathComponent("Sources").path
        let result = try runProgram(URL(fileURLWithPath: "/usr/bin/env"), [
            "swiftc", "-typecheck", "-swift-version", "6", "-I", "\(products)/Modules",
            "-Xcc", "-fmodule-map-file=\(sources)/COpenSSL/module.modulemap",
            "-Xcc", "-fmodule-map-file=\(sources)/CLibWebSockets/module.modulemap",
            "-load-plugin-executable", "\(products)/TetherContractMacros-tool#TetherContractMacros",
        ] + paths, timeout: .seconds(120))
        return (result.status, result.stdout + result.stderr)
    }

    @Test func aContractItsViewModelAndItsClientCompile() throws {
        let server = try Self.typecheck(["Contract.swift": Self.contract(member: "count"), "Server.swift": Self.server])
        #expect(server.status == 0, "\(server.output)")
        let client = try Self.typecheck(["Contract.swift": Self.contract(member: "count"), "Client.swift": Self.client()])
        #expect(client.status == 0, "\(client.output)")
    }

    @Test func aMemberRenamedInTheContractStopsTheViewModelAndTheClient() throws {
        let server = try Self.typecheck(["Contract.swift": Self.contract(member: "total"), "Server.swift": Self.server])
        #expect(server.status != 0)
        #expect(server.output.contains("does not conform to protocol 'CounterContract.Implementation'"), "the ViewModel: \(server.output)")
        let client = try Self.typecheck(["Contract.swift": Self.contract(member: "total"), "Client.swift": Self.client()])
        #expect(client.status != 0)
        #expect(client.output.contains("has no member 'count'") || client.output.contains("no dynamic member 'count'"), "the client: \(client.output)")
    }

    @Test func anArgumentOfTheWrongTypeStopsTheClient() throws {
        let client = try Self.typecheck(["Contract.swift": Self.contract(member: "count"), "Client.swift": Self.client(increment: #".init(by: "x")"#)])
        #expect(client.status != 0)
        #expect(client.output.contains("cannot convert value of type 'String' to expected argument type 'Int"), "\(client.output)")
    }
}
