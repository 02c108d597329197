/// Short random identifiers for sessions and epochs.
enum RandomID {
    private static let alphabet = Array("0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ".utf8)

    static func make(length: Int = 12) -> String {
        var generator = SystemRandomNumberGenerator()
        return String(decoding: (0..<length).map { _ in alphabet.randomElement(using: &generator)! }, as: UTF8.self)
    }
}
