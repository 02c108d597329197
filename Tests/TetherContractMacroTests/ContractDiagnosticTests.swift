import Testing

/// One test per mistake `@Contract` reports: the error lands on the offending line and nothing
/// is generated, so the compiler adds no errors of its own from the expansion.
@Suite("@Contract's diagnostics")
struct ContractDiagnosticTests {
    @Test func notAnEnum() {
        expectExpansion("""
            @Contract("counter")
            struct Counter {
            }
            """, """
            struct Counter {
            }
            """, diagnostics: [error("@Contract applies to a caseless enum", line: 1, column: 1)])
    }
}
