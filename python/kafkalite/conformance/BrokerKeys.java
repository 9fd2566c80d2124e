// Lists every broker key of Apache Kafka's KafkaConfig (AbstractKafkaConfig.CONFIG_DEF) as
// tab-separated lines: name, type, default (ConfigDef's text form; "null" for a null
// default), dynamic update mode (DynamicBrokerConfig: per-broker, cluster-wide, read-only)
// and validator. Run by kafkalite.conformance.broker_keys with Java's source launcher over
// the Kafka jars' class path (`java -cp 'libs/*' BrokerKeys.java`).

import java.util.Map;
import java.util.TreeMap;
import org.apache.kafka.common.config.ConfigDef;
import org.apache.kafka.server.config.AbstractKafkaConfig;
import org.apache.kafka.server.config.DynamicBrokerConfig;

public class BrokerKeys {
    public static void main(String[] args) {
        Map<String, String> modes = DynamicBrokerConfig.dynamicConfigUpdateModes();
        Map<String, ConfigDef.ConfigKey> keys = new TreeMap<>(AbstractKafkaConfig.CONFIG_DEF.configKeys());
        for (ConfigDef.ConfigKey k : keys.values()) {
            String def = !k.hasDefault() ? "<required>"
                : k.defaultValue == null ? "null" : ConfigDef.convertToString(k.defaultValue, k.type);
            String validator = k.validator == null ? "" : String.valueOf(k.validator);
            System.out.println(String.join("\t", k.name, k.type.name(), clean(def),
                modes.getOrDefault(k.name, "read-only"), clean(validator),
                String.valueOf(k.internalConfig)));
        }
    }

    private static String clean(String s) {
        return s.replace('\t', ' ').replace('\n', ' ');
    }
}
