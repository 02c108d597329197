import Testing
@testable import TetherNATS

/// A JetStream publish's answer, read: the stored sequence, or the refusal the cluster's fence
/// acts on. The replies are as nats-server 2.9.10 and 2.15.1 write them.
@Suite("JetStream publish acknowledgements")
struct PublishAcknowledgementTests {
    @Test func eachReplyGivesItsResult() {
        let table: [(String, String)] = [
            (#"{"stream":"S","seq":5}"#, "stored at 5"),
            (#"{"stream":"S","seq":5,"duplicate":true}"#, "duplicate message id (already stored at sequence 5)"),
            (#"{"error":{"code":400,"err_code":10071,"description":"wrong last sequence: 4"}}"#, "wrong last sequence (the subject is at 4)"),
            (#"{"error":{"code":400,"err_code":10164,"description":"wrong last sequence"}}"#, "wrong last sequence"),
            // 2.10 on, while another publish with the same message id is being stored.
            (#"{"error":{"code":409,"err_code":10158,"description":"duplicate message id is in process"}}"#,
             "duplicate message id (a message with it is being stored)"),
            (#"{"error":{"code":503,"err_code":10077,"description":"maximum messages exceeded"}}"#,
             "JetStream error 10077 (503): maximum messages exceeded"),
        ]
        for (reply, expected) in table {
            let result = JetStream.publishAcknowledgement(Array(reply.utf8))
            let described = switch result {
            case .success(let sequence): "stored at \(sequence)"
            case .failure(let error): error.description
            }
            #expect(described == expected, "\(reply)")
        }
    }
}
