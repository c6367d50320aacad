import com.fasterxml.jackson.databind.ObjectMapper;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.apache.bookkeeper.client.BookKeeper;
import org.apache.bookkeeper.client.LedgerHandle;
import org.apache.bookkeeper.conf.ClientConfiguration;
import org.apache.pulsar.client.impl.MessageIdImpl;

/**
 * What a broker that crashed between creating a ledger and recording it leaves behind: ledgers
 * made through BookKeeper's own client, with the custom metadata Pulsar writes on them
 * (LedgerMetadataUtils), filled with entries, closed, and recorded nowhere.
 *
 *   LeakMaker ZK_HOSTS MANAGED_LEDGER_NAME CURSOR_OR_DASH COUNT BYTES_EACH
 *
 * A full topic name (persistent://tenant/ns/topic) for MANAGED_LEDGER_NAME makes compacted
 * ledgers of that topic instead, as AbstractTwoPhaseCompactor makes them: what a compaction
 * interrupted after its phase two created its ledger leaves (CURSOR_OR_DASH is then ignored).
 *
 *   LeakMaker ZK_HOSTS bucket:TOPIC CURSOR COUNT BYTES_EACH BUCKET_KEY
 *
 * makes delayed-delivery bucket snapshot ledgers of the subscription CURSOR of TOPIC (a full
 * topic name) for BUCKET_KEY (#pulsar.internal.delayed.bucket_START_END), with the metadata
 * BookkeeperBucketSnapshotStorage writes (LedgerMetadataUtils.buildMetadataForDelayedIndexBucket):
 * what a broker that crashed between writing a snapshot and recording it in the cursor leaves.
 *
 * ZK_HOSTS as ZooKeeper's clients write them (host:port,host:port); BookKeeper's metadata
 * service URI separates an ensemble's servers with ';' instead (its URI's authority cannot
 * hold ','), as the bookies' own metadataServiceUri does.
 *
 * Prints {"ledgers": [...]} on stdout.
 */
public final class LeakMaker {
    private LeakMaker() {
    }

    public static void main(String[] args) throws Exception {
        ClientConfiguration conf = new ClientConfiguration()
                .setMetadataServiceUri("zk+hierarchical://" + args[0].replace(',', ';') + "/ledgers");
        Map<String, byte[]> metadata = new HashMap<>();
        metadata.put("application", bytes("pulsar"));
        if (args[1].startsWith("bucket:")) {
            metadata.put("component", bytes("delayed-index-bucket"));
            metadata.put("pulsar/delayedIndexTopic", bytes(args[1].substring("bucket:".length())));
            metadata.put("pulsar/delayedIndexCursor", bytes(args[2]));
            metadata.put("pulsar/delayedIndexBucketKey", bytes(args[5]));
        } else if (args[1].startsWith("persistent://")) {
            metadata.put("component", bytes("compacted-ledger"));
            metadata.put("pulsar/compactedTopic", bytes(args[1]));
            metadata.put("pulsar/compactedTo", new MessageIdImpl(0, 0, -1).toByteArray());
        } else {
            metadata.put("component", bytes("managed-ledger"));
            metadata.put("pulsar/managed-ledger", bytes(args[1]));
            if (!"-".equals(args[2])) {
                metadata.put("pulsar/cursor", bytes(args[2]));
            }
        }
        int count = Integer.parseInt(args[3]);
        long size = Long.parseLong(args[4]);
        byte[] entry = new byte[64 * 1024];
        List<Long> made = new ArrayList<>();
        BookKeeper bookkeeper = new BookKeeper(conf);
        try {
            for (int i = 0; i < count; i++) {
                LedgerHandle ledger = bookkeeper.createLedger(1, 1, 1, BookKeeper.DigestType.CRC32C,
                        new byte[0], metadata);
                for (long written = 0; written < size; written += entry.length) {
                    ledger.addEntry(entry);
                }
                ledger.close();
                made.add(ledger.getId());
            }
        } finally {
            bookkeeper.close();
        }
        System.out.println(new ObjectMapper().writeValueAsString(Map.of("ledgers", made)));
    }

    private static byte[] bytes(String text) {
        return text.getBytes(StandardCharsets.UTF_8);
    }
}
