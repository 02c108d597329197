// Here, not in TetherState, so that contracts report argument errors in the same words.
extension DecodingError {
    /// The decoder's own message ("expected number at args.by, got string"): short enough for
    /// an error to a client, and it names the member.
    public var readableDescription: String {
        switch self {
        case .typeMismatch(_, let context), .valueNotFound(_, let context), .keyNotFound(_, let context),
            .dataCorrupted(let context):
            return context.debugDescription
        @unknown default:
            return "\(self)"
        }
    }
}
