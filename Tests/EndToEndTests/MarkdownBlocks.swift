/// The fenced blocks of one section of a Markdown document, for tests that run the docs.
enum MarkdownBlocks {
    /// The blocks of `section` (a `## ` heading line, up to the next one), with their
    /// languages, in order.
    static func of(_ markdown: String, section: String) -> [(language: String, text: String)] {
        var blocks: [(String, String)] = []
        var inSection = false
        var open: (String, [Substring])?
        for line in markdown.split(separator: "\n", omittingEmptySubsequences: false) {
            if let block = open {
                if line.hasPrefix("```") {
                    blocks.append((block.0, block.1.map { $0 + "\n" }.joined()))
                    open = nil
                } else {
                    open = (block.0, block.1 + [line])
                }
            } else if line.hasPrefix("## ") {
                if inSection { break }
                inSection = line == section
            } else if inSection, line.hasPrefix("```") {
                open = (String(line.dropFirst(3)), [])
            }
        }
        return blocks
    }
}
