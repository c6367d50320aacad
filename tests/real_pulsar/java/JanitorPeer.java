import com.fasterxml.jackson.databind.ObjectMapper;
import java.util.HashMap;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import org.apache.bookkeeper.mledger.deletion.LedgerComponent;
import org.apache.bookkeeper.mledger.deletion.LedgerType;
import org.apache.bookkeeper.mledger.deletion.PendingDeleteLedgerInfo;
import org.apache.bookkeeper.mledger.deletion.PipPendingDeleteLedgerInfo;
import org.apache.bookkeeper.mledger.proto.MLDataFormats;
import org.apache.pulsar.client.api.Consumer;
import org.apache.pulsar.client.api.DeadLetterPolicy;
import org.apache.pulsar.client.api.Message;
import org.apache.pulsar.client.api.Producer;
import org.apache.pulsar.client.api.PulsarClient;
import org.apache.pulsar.client.api.Schema;
import org.apache.pulsar.client.api.SubscriptionInitialPosition;
import org.apache.pulsar.client.api.SubscriptionType;

/**
 * A Java peer of ledger-janitor, on the real Java client: one JSON line per fact on stdout.
 *
 *   pip-schema                                  what Schema.AVRO makes of the PIP's own class
 *   schema                                      the schema Schema.AVRO gives our contract class
 *   produce URL DELETION_TOPIC TOPIC LEDGER COMPONENT DELAY_S   one pending deletion
 *   reconsume URL DELETION_TOPIC SUBSCRIPTION COUNT DELAY_S     receive COUNT, reconsumeLater each
 *   receive URL TOPIC SUBSCRIPTION COUNT        receive COUNT (enableRetry, DeadLetterPolicy), ack
 *   read URL TOPIC SUBSCRIPTION COUNT           receive COUNT with a plain consumer, ack
 */
public final class JanitorPeer {
    private static final ObjectMapper JSON = new ObjectMapper();

    private JanitorPeer() {
    }

    public static void main(String[] args) throws Exception {
        switch (args[0]) {
            case "pip-schema" -> pipSchema();
            case "schema" -> emit(Map.of("schema",
                    Schema.AVRO(PendingDeleteLedgerInfo.class).getSchemaInfo().getSchemaDefinition()));
            case "produce" -> produce(args);
            case "reconsume" -> reconsume(args);
            case "receive" -> receive(args);
            case "read" -> read(args);
            default -> throw new IllegalArgumentException("unknown command " + args[0]);
        }
    }

    private static void pipSchema() {
        Map<String, Object> out = new TreeMap<>();
        try {
            Schema<PipPendingDeleteLedgerInfo> schema = Schema.AVRO(PipPendingDeleteLedgerInfo.class);
            out.put("schema", schema.getSchemaInfo().getSchemaDefinition());
            out.put("null_context_bytes", schema.encode(new PipPendingDeleteLedgerInfo()).length);
        } catch (Throwable e) {
            out.put("error", e.getClass().getName() + ": " + e.getMessage());
        }
        try {
            Schema<PipPendingDeleteLedgerInfo> schema = Schema.AVRO(PipPendingDeleteLedgerInfo.class);
            var context = MLDataFormats.ManagedLedgerInfo.LedgerInfo.newBuilder().setLedgerId(5)
                    .setOffloadContext(MLDataFormats.OffloadContext.newBuilder().setComplete(true)
                            .setUidMsb(1).setUidLsb(2)).build();
            out.put("context_bytes", schema.encode(
                    new PipPendingDeleteLedgerInfo("public/default/t", 5, context)).length);
        } catch (Throwable e) {
            out.put("context_error", e.getClass().getName() + ": " + e.getMessage());
        }
        emit(out);
    }

    private static PulsarClient client(String url) throws Exception {
        return PulsarClient.builder().serviceUrl(url).operationTimeout(30, TimeUnit.SECONDS).build();
    }

    private static void produce(String[] args) throws Exception {
        try (PulsarClient client = client(args[1]);
                Producer<PendingDeleteLedgerInfo> producer = client
                        .newProducer(Schema.AVRO(PendingDeleteLedgerInfo.class))
                        .topic(args[2]).enableBatching(false).create()) {
            Map<String, String> properties = new HashMap<>();
            properties.put("sentBy", "java");
            PendingDeleteLedgerInfo info = new PendingDeleteLedgerInfo(args[3],
                    LedgerComponent.valueOf(args[5]), LedgerType.LEDGER, Long.parseLong(args[4]),
                    null, true, properties);
            var id = producer.newMessage().value(info)
                    .deliverAfter(Long.parseLong(args[6]), TimeUnit.SECONDS).send();
            emit(Map.of("sent", id.toString()));
        }
    }

    private static Consumer<PendingDeleteLedgerInfo> consumer(PulsarClient client, String topic,
            String subscription) throws Exception {
        return client.newConsumer(Schema.AVRO(PendingDeleteLedgerInfo.class))
                .topic(topic).subscriptionName(subscription)
                .subscriptionType(SubscriptionType.Shared)
                .subscriptionInitialPosition(SubscriptionInitialPosition.Earliest)
                .enableRetry(true)
                .deadLetterPolicy(DeadLetterPolicy.builder().maxRedeliverCount(10)
                        .retryLetterTopic(topic + "-" + subscription + "-RETRY")
                        .deadLetterTopic(topic + "_archive").build())
                .subscribe();
    }

    /** Receive COUNT messages; each one is described, then handled by `then`. */
    private static void each(Consumer<PendingDeleteLedgerInfo> consumer, String count,
            MessageAction then) throws Exception {
        for (int i = 0; i < Integer.parseInt(count); i++) {
            Message<PendingDeleteLedgerInfo> message = consumer.receive(60, TimeUnit.SECONDS);
            if (message == null) {
                throw new IllegalStateException("nothing to receive");
            }
            emit(describe(message));
            then.accept(message);
        }
    }

    private interface MessageAction {
        void accept(Message<PendingDeleteLedgerInfo> message) throws Exception;
    }

    private static void reconsume(String[] args) throws Exception {
        try (PulsarClient client = client(args[1]);
                Consumer<PendingDeleteLedgerInfo> consumer = consumer(client, args[2], args[3])) {
            long delay = Long.parseLong(args[5]);
            each(consumer, args[4], m -> consumer.reconsumeLater(m, delay, TimeUnit.SECONDS));
        }
    }

    private static void receive(String[] args) throws Exception {
        try (PulsarClient client = client(args[1]);
                Consumer<PendingDeleteLedgerInfo> consumer = consumer(client, args[2], args[3])) {
            each(consumer, args[4], consumer::acknowledge);
        }
    }

    private static void read(String[] args) throws Exception {
        try (PulsarClient client = client(args[1]);
                Consumer<PendingDeleteLedgerInfo> consumer = client
                        .newConsumer(Schema.AVRO(PendingDeleteLedgerInfo.class))
                        .topic(args[2]).subscriptionName(args[3])
                        .subscriptionInitialPosition(SubscriptionInitialPosition.Earliest)
                        .subscribe()) {
            each(consumer, args[4], consumer::acknowledge);
        }
    }

    private static Map<String, Object> describe(Message<PendingDeleteLedgerInfo> message) {
        PendingDeleteLedgerInfo info = message.getValue();
        Map<String, Object> out = new TreeMap<>();
        out.put("topic", message.getTopicName());
        out.put("properties", new TreeMap<>(message.getProperties()));
        out.put("topicName", info.getTopicName());
        out.put("ledgerId", info.getLedgerId());
        out.put("ledgerComponent", String.valueOf(info.getLedgerComponent()));
        out.put("ledgerType", String.valueOf(info.getLedgerType()));
        out.put("checkLedgerStillInUse", info.isCheckLedgerStillInUse());
        out.put("infoProperties", info.getProperties());
        out.put("context", info.getContext() == null ? null : info.getContext().length);
        out.put("redeliveryCount", message.getRedeliveryCount());
        return out;
    }

    private static void emit(Map<String, ?> fact) {
        try {
            System.out.println(JSON.writeValueAsString(fact));
            System.out.flush();
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
    }
}
