package org.apache.bookkeeper.mledger.deletion;

import java.util.HashMap;
import java.util.Map;
import org.apache.bookkeeper.mledger.proto.MLDataFormats;

/** PIP-186's class exactly as the PIP declares it: `context` of the protobuf type. */
public class PipPendingDeleteLedgerInfo {
    private String topicName;
    private LedgerComponent ledgerComponent;
    private LedgerType ledgerType;
    private Long ledgerId;
    private MLDataFormats.ManagedLedgerInfo.LedgerInfo context;
    private boolean checkLedgerStillInUse;
    private Map<String, String> properties = new HashMap<>();

    public PipPendingDeleteLedgerInfo() {
    }

    public PipPendingDeleteLedgerInfo(String topicName, long ledgerId,
            MLDataFormats.ManagedLedgerInfo.LedgerInfo context) {
        this.topicName = topicName;
        this.ledgerComponent = LedgerComponent.MANAGED_LEDGER;
        this.ledgerType = LedgerType.OFFLOAD_LEDGER;
        this.ledgerId = ledgerId;
        this.context = context;
        this.checkLedgerStillInUse = true;
    }
}
