import Testing
import TetherNATS
@testable import TetherServer

/// Which JetStream answers a node starting up waits out (up to 30 s) instead of exiting.
@Suite("Cluster join: JetStream answers that mean not yet")
struct ClusterJoinTests {
    @Test(arguments: [
        (NATSError.streamNotCreated(stream: "TETHER_LOG_0", setting: "jetstream", detail: "no JetStream API answered"), true),
        (.streamNotCreated(stream: "TETHER_LOG_0", setting: "replicas = 3", detail: "insufficient resources: no suitable peers for placement (JetStream error 10005)"), true),
        (.streamNotCreated(stream: "TETHER_LOG_0", setting: "configuration", detail: "JetStream system temporarily unavailable (JetStream error 10008)"), true),
        (.jetStream(code: 503, errorCode: 10008, description: "JetStream system temporarily unavailable"), true),
        (.streamNotCreated(stream: "TETHER_LOG_0", setting: "replicas = 5", detail: "replicas > 1 not supported in non-clustered mode (JetStream error 10074)"), false),
        (.jetStream(code: 400, errorCode: 10058, description: "stream name already in use with a different configuration"), false),
        (.timeout(subject: "$JS.API.STREAM.INFO.TETHER_LOG_0"), false),
    ])
    func aStartingNodeWaitsOnlyForTransientAnswers(_ error: NATSError, waits: Bool) {
        #expect(ClusterNode.isNotReadyYet(error) == waits, "\(error)")
    }
}
