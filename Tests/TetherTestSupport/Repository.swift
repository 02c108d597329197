import Foundation

/// The checkout the tests were built from: for tests that read its docs and scripts.
public enum Repository {
    public static let root = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    /// A file of the checkout, as text ("README.md", "docs/PROTOCOL.md").
    public static func text(_ path: String) throws -> String {
        try String(contentsOf: root.appendingPathComponent(path), encoding: .utf8)
    }

    /// The fenced code blocks (```LANGUAGE ... ```) of a Markdown section: from the heading
    /// `heading` (e.g. "## Example exchange") to the next heading of that level or higher.
    public static func codeBlocks(in markdown: String, section heading: String, language: String? = nil) -> [String] {
        let level = heading.prefix { $0 == "#" }.count
        var blocks: [String] = []
        var inSection = false
        var open: (language: Substring, lines: [Substring])?
        for line in markdown.split(separator: "\n", omittingEmptySubsequences: false) {
            if var block = open {
                if line.hasPrefix("```") {
                    if language == nil || block.language == language! { blocks.append(block.lines.joined(separator: "\n") + "\n") }
                    open = nil
                } else {
                    block.lines.append(line)
                    open = block
                }
            } else if line.hasPrefix("#") {
                if line == heading {
                    inSection = true
                } else if inSection, line.prefix(while: { $0 == "#" }).count <= level {
                    break
                }
            } else if inSection, line.hasPrefix("```") {
                open = (line.dropFirst(3), [])
            }
        }
        return blocks
    }
}
