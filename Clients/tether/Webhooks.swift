import ArgumentParser
import Foundation
import TetherClient
import TetherJSON

/// `tether webhooks`: the daemon's webhook endpoints (GET /webhooks), dead letters sent again
/// (`retry NAME`), a test event sent now (`test NAME`). An admin token, as for `tether rooms`.
struct Webhooks: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "List the server's webhook endpoints with what waits for each; retry or test one.",
        discussion: """
            Endpoints are set in the daemon's config file (docs/WEBHOOKS.md). A server with token \
            secrets needs a token with the admin claim. Exits 2 when the server refuses, 1 when it \
            cannot be reached.
            """,
        subcommands: [List.self, Retry.self, Test.self],
        defaultSubcommand: List.self)

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "One line per endpoint: pending and dead events, the last error (the default).",
            usage: "tether webhooks [list] [--url <url>] [--token-file <file>] [--json]")
        @OptionGroup var connection: ConnectionOptions
        @Flag(help: "Print the server's answer as one JSON line.") var json = false

        func run() async throws {
            Output.prepareProcess(logLevel: connection.logLevel)
            let answer = try await AdminCommand.ask(connection, "list the webhooks") { try await $0.webhooks() }
            if json { return Output.writeLine(answer.body) }
            let endpoints = answer.json?["webhooks"]?.arrayValue ?? []
            if endpoints.isEmpty { return Output.writeLine(Array("no webhook endpoints (the config file's webhooks: list)".utf8)) }
            if answer.json?["delivering"] == false {
                // A cluster node that does not deliver: its queues are empty, the deliverer's are not.
                let node = answer.json?["deliveredBy"]?.stringValue.map { "node \($0)" } ?? "another node"
                Output.writeLine(Array("this node does not deliver webhooks: \(node) does (ask it for the queues below)".utf8))
            }
            for endpoint in endpoints {
                var line = "\(endpoint["name"]?.stringValue ?? "?")  \(endpoint["url"]?.stringValue ?? "")  pending \(endpoint["pending"]?.intValue ?? 0)"
                line += "  dead \(endpoint["dead"]?.intValue ?? 0)"
                if endpoint["disabled"] == true { line += "  DISABLED (410 Gone: tether webhooks retry)" }
                if let error = endpoint["lastError"]?.stringValue { line += "  last error: \(error)" }
                Output.writeLine(Array(line.utf8))
            }
        }
    }

    struct Retry: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Send an endpoint's dead-lettered events again, and re-enable it after a 410.",
            usage: "tether webhooks retry [--url <url>] [--token-file <file>] <endpoint>")
        @OptionGroup var connection: ConnectionOptions
        @Argument(help: "The endpoint's name.") var endpoint: String

        func run() async throws {
            Output.prepareProcess(logLevel: connection.logLevel)
            let answer = try await AdminCommand.ask(connection, "retry \(endpoint)") { try await $0.webhook(endpoint, "retry") }
            Output.writeLine(Array("\(endpoint): \(answer.json?["revived"]?.intValue ?? 0) dead event(s) pending again".utf8))
        }
    }

    struct Test: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Send a signed webhook.test event to an endpoint now and print its answer.",
            usage: "tether webhooks test [--url <url>] [--token-file <file>] <endpoint>")
        @OptionGroup var connection: ConnectionOptions
        @Argument(help: "The endpoint's name.") var endpoint: String

        func run() async throws {
            Output.prepareProcess(logLevel: connection.logLevel)
            let answer = try await AdminCommand.ask(connection, "test \(endpoint)") { try await $0.webhook(endpoint, "test") }
            let milliseconds = answer.json?["milliseconds"]?.intValue ?? 0
            if let status = answer.json?["status"]?.intValue {
                Output.writeLine(Array("\(endpoint): HTTP \(status) in \(milliseconds) ms".utf8))
                if !(200..<300).contains(status) { throw ExitCode(Output.serverError) }
            } else {
                Output.writeLine(Array("\(endpoint): \(answer.json?["error"]?.stringValue ?? "no answer") after \(milliseconds) ms".utf8))
                throw ExitCode(Output.serverError)
            }
        }
    }
}
