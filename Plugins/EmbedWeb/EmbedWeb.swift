import Foundation
import PackagePlugin

/// Runs Scripts/embed-web.sh at build time: every file of Clients/web becomes a raw string
/// literal in WebAssets.swift, written to the plugin's work directory and compiled into
/// TetherServer. Nothing generated is committed.
@main
struct EmbedWeb: BuildToolPlugin {
    func createBuildCommands(context: PluginContext, target: Target) throws -> [Command] {
        let root = context.package.directoryURL
        let script = root.appending(path: "Scripts/embed-web.sh")
        let output = context.pluginWorkDirectoryURL.appending(path: "WebAssets.swift")
        // Every file is an input, so an edit regenerates.
        let web = root.appending(path: "Clients/web")
        var inputs = [script]
        let enumerator = FileManager.default.enumerator(
            at: web, includingPropertiesForKeys: [.isRegularFileKey], options: [.skipsHiddenFiles])
        while let url = enumerator?.nextObject() as? URL {
            if (try? url.resourceValues(forKeys: [.isRegularFileKey]).isRegularFile) == true { inputs.append(url) }
        }
        return [
            .buildCommand(
                displayName: "Embedding Clients/web into \(target.name)",
                executable: URL(fileURLWithPath: "/bin/bash"),
                arguments: [script.path, output.path],
                inputFiles: inputs,
                outputFiles: [output])
        ]
    }
}
