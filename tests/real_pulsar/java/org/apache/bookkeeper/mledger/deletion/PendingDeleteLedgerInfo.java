package org.apache.bookkeeper.mledger.deletion;

import java.util.HashMap;
import java.util.Map;

/**
 * PIP-186's PendingDeleteLedgerInfo as ledger-janitor's contract has it: every field of the
 * PIP, with `context` the serialized MLDataFormats.ManagedLedgerInfo.LedgerInfo (a protobuf
 * field cannot be reflected into Avro; see PipPendingDeleteLedgerInfo).
 */
public class PendingDeleteLedgerInfo {
    private String topicName;
    private LedgerComponent ledgerComponent;
    private LedgerType ledgerType;
    private Long ledgerId;
    private byte[] context;
    private boolean checkLedgerStillInUse;
    private Map<String, String> properties = new HashMap<>();

    public PendingDeleteLedgerInfo() {
    }

    public PendingDeleteLedgerInfo(String topicName, LedgerComponent ledgerComponent,
            LedgerType ledgerType, Long ledgerId, byte[] context, boolean checkLedgerStillInUse,
            Map<String, String> properties) {
        this.topicName = topicName;
        this.ledgerComponent = ledgerComponent;
        this.ledgerType = ledgerType;
        this.ledgerId = ledgerId;
        this.context = context;
        this.checkLedgerStillInUse = checkLedgerStillInUse;
        this.properties = properties;
    }

    public String getTopicName() {
        return topicName;
    }

    public LedgerComponent getLedgerComponent() {
        return ledgerComponent;
    }

    public LedgerType getLedgerType() {
        return ledgerType;
    }

    public Long getLedgerId() {
        return ledgerId;
    }

    public byte[] getContext() {
        return context;
    }

    public boolean isCheckLedgerStillInUse() {
        return checkLedgerStillInUse;
    }

    public Map<String, String> getProperties() {
        return properties;
    }
}
