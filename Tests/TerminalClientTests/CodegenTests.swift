import Foundation
import Testing
import TetherTestSupport

/// `tether codegen typescript` against a real tetherd, checked by the TypeScript compiler
/// (Debian's node-typescript, which Scripts/setup.sh installs): a program that uses the counter
/// as its contract says compiles with `tsc --strict`, one that sends it wrong arguments does not.
@Suite("tether codegen typescript", .serialized, .timeLimit(.minutes(3)))
struct CodegenTests {
    @Test func theGeneratedTypesAcceptCorrectProgramsAndRejectWrongOnes() async throws {
        let tsc = try typeScriptCompiler()
        let daemon = try Daemon(arguments: ["--memory-only"])
        defer { daemon.stop() }
        let folder = try temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let output = folder.appendingPathComponent("tether-types.d.ts")

        let written = try await runTether(["codegen", "typescript", "--url", daemon.url, "--output", output.path])
        #expect(written.status == 0 && written.stdout.isEmpty, "\(written.stderr)")
        let declarations = try String(contentsOf: output, encoding: .utf8)
        #expect(declarations.contains("export interface CounterState {\n  count: number;\n}"), "\(declarations)")
        #expect(declarations.contains(#"export type CounterError = "overflow";"#))
        #expect(declarations.contains("export type TetherServerState"), "every kind, the server's own included")
        let printed = try await runTether(["codegen", "typescript", "--url", daemon.url])
        #expect(printed.status == 0 && printed.stdout == declarations, "without --output: the same text on stdout")

        // The program imports tether.js by a relative path: its declarations lie beside it.
        for file in ["tether.js", "tether.d.ts"] {
            try FileManager.default.copyItem(at: Repository.root.appendingPathComponent("Clients/web/\(file)"), to: folder.appendingPathComponent(file))
        }
        try write(folder, "good.ts", """
            import { TetherClient, TetherError } from "./tether.js";
            import type { CounterRoom, CounterError } from "./tether-types.js";

            const client = new TetherClient("ws://127.0.0.1:1");
            const room = client.room("counter");
            const same: CounterRoom = client.room("counter:team-a");
            async function main(): Promise<number> {
              await room.send("increment", { by: 2 });
              await room.send("increment", {}, { predict: (state) => { state.count += 1; } });
              await same.send("reset");
              room.observe("/count", (count: number | undefined) => console.log(count));
              const synced = await room.ready();
              const count: number = synced.state.count;
              return count + (room.state?.count ?? 0);
            }
            main().catch((error: TetherError<CounterError>) => {
              const reason: CounterError | undefined = error.reason;
              console.log(reason);
            });
            const untyped = client.room("some-kind-of-yours");
            void untyped.send("anything", { at: "all" });

            """)
        try write(folder, "bad.ts", """
            import { TetherClient } from "./tether.js";

            const client = new TetherClient("ws://127.0.0.1:1");
            const room = client.room("counter");
            void room.send("increment", { by: "x" });
            void room.send("explode", {});
            void room.send("reset", { by: 1 });
            const count: string = room.state!.count;

            """)

        let good = try await compile(tsc, in: folder, ["tether-types.d.ts", "good.ts"])
        #expect(good.status == 0, "a correct program compiles:\n\(good.output)")
        let bad = try await compile(tsc, in: folder, ["tether-types.d.ts", "bad.ts"])
        #expect(bad.status != 0)
        let errors = bad.output.split(separator: "\n").filter { $0.contains("error TS") }
        // Line 5: a string for the integer `by`; 6: an action the counter does not have; 7: an
        // argument `reset` does not take; 8: the count is a number.
        #expect(errors.count == 4, "\(bad.output)")
        #expect(errors.contains { $0.hasPrefix("bad.ts(5,") && $0.contains("error TS2322") }, "\(bad.output)")
        #expect(errors.contains { $0.hasPrefix("bad.ts(6,") && $0.contains("error TS2345") && $0.contains(#""explode""#) }, "\(bad.output)")
        #expect(errors.contains { $0.hasPrefix("bad.ts(7,") && $0.contains("error TS2322") }, "\(bad.output)")
        #expect(errors.contains { $0.hasPrefix("bad.ts(8,") && $0.contains("error TS2322") }, "\(bad.output)")
    }

    /// Clients/web/examples/counter.js is checked against tether-types.d.ts beside it, which must be
    /// what codegen writes for the demo server today: else the check would pass on stale types.
    @Test func theCounterExampleTypeChecksAgainstTheDemoServersCurrentTypes() async throws {
        let tsc = try typeScriptCompiler()
        let daemon = try Daemon(arguments: ["--memory-only"])
        defer { daemon.stop() }
        let generated = try await runTether(["codegen", "typescript", "--url", daemon.url, "--tether-module", "/tether.js"])
        #expect(generated.status == 0, "\(generated.stderr)")
        let checkedIn = try Repository.text("Clients/web/examples/tether-types.d.ts")
        let current = generated.stdout == checkedIn  // a Bool: the failure shows the command, not both files
        #expect(current, """
            Clients/web/examples/tether-types.d.ts is not what the demo server's describe gives now. Refresh it: \
            with `.build/debug/tetherd --memory-only` running, \
            `.build/debug/tether codegen typescript --tether-module /tether.js --output Clients/web/examples/tether-types.d.ts`
            """)

        // tsconfig.json there: strict and checkJs, with /tether.js mapped to ../tether.d.ts.
        let checked = try await run(tsc, in: Repository.root, ["-p", "Clients/web/examples", "--pretty", "false"])
        #expect(checked.status == 0, "counter.js type-checks:\n\(checked.output)")
    }

    @Test func aMissingOutputFolderIsAUsageError() async throws {
        let result = try await runTether(["codegen", "typescript", "--output", "/no/such/folder/types.d.ts"])
        #expect(result.status == 64 && result.stderr.contains("no folder /no/such/folder"), "\(result.stderr)")
    }

    // MARK: Helpers

    /// `tsc` from PATH; its absence fails the test (CI must have it: Scripts/setup.sh installs it).
    func typeScriptCompiler() throws -> URL {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
        for folder in path.split(separator: ":") {
            let candidate = URL(fileURLWithPath: String(folder)).appendingPathComponent("tsc")
            if FileManager.default.isExecutableFile(atPath: candidate.path) { return candidate }
        }
        throw TestFailure("tsc is not installed: run Scripts/setup.sh (it installs Debian's node-typescript)")
    }

    func compile(_ tsc: URL, in folder: URL, _ files: [String]) async throws -> (status: Int32, output: String) {
        let arguments = ["--strict", "--noEmit", "--pretty", "false", "--target", "es2022", "--module", "es2022", "--moduleResolution", "node"]
        return try await run(tsc, in: folder, arguments + files)
    }

    func run(_ tsc: URL, in folder: URL, _ arguments: [String]) async throws -> (status: Int32, output: String) {
        // Run in the folder, so the errors name the files as the expectations do.
        let child = try ChildProcess(URL(fileURLWithPath: "/bin/sh"), ["-c", #"cd "$1" && shift && exec "$@""#, "sh", folder.path, tsc.path] + arguments)
        guard let status = try await child.waitForExit(timeout: .seconds(90)) else {
            throw TestFailure("tsc did not finish within 90 s\n\(child.stdout)\(child.stderr)")
        }
        return (status, child.stdout + child.stderr)
    }

    func temporaryFolder() throws -> URL {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("tether-codegen-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        return folder
    }

    func write(_ folder: URL, _ name: String, _ text: String) throws {
        try text.write(to: folder.appendingPathComponent(name), atomically: true, encoding: .utf8)
    }
}
