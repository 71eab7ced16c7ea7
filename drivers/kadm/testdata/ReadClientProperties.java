// ReadClientProperties reads a Kafka client properties file as the Java
// client does (java.util.Properties.load from a stream: ISO 8859-1 with
// escapes), then parses its sasl.jaas.config with the JDK's JAAS
// configuration parser, whose grammar Kafka's sasl.jaas.config follows
// ("LoginModuleClass flag (key=value)*;"). It prints each property and
// each JAAS option as KEY<TAB>VALUE lines, values Java-escaped (\n), for
// drivers/kadm/formats_test.go.
//
//	java ReadClientProperties.java client.properties
import java.io.FileInputStream;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.Properties;
import java.util.TreeSet;
import javax.security.auth.login.AppConfigurationEntry;
import javax.security.auth.login.Configuration;

public class ReadClientProperties {
    static String esc(String s) {
        return s.replace("\\", "\\\\").replace("\n", "\\n").replace("\r", "\\r").replace("\t", "\\t");
    }

    public static void main(String[] args) throws Exception {
        Properties p = new Properties();
        try (InputStream in = new FileInputStream(args[0])) {
            p.load(in);
        }
        for (String k : new TreeSet<>(p.stringPropertyNames())) {
            System.out.println(k + "\t" + esc(p.getProperty(k)));
        }
        String jaas = p.getProperty("sasl.jaas.config");
        if (jaas == null) {
            return;
        }
        Path f = Files.createTempFile("jaas", ".conf");
        try {
            Files.writeString(f, "KafkaClient {\n" + jaas + "\n};\n");
            System.setProperty("java.security.auth.login.config", f.toString());
            AppConfigurationEntry[] entries = Configuration.getConfiguration().getAppConfigurationEntry("KafkaClient");
            if (entries == null || entries.length != 1) {
                throw new IllegalStateException("sasl.jaas.config: want one login module");
            }
            AppConfigurationEntry e = entries[0];
            System.out.println("jaas.module\t" + e.getLoginModuleName());
            System.out.println("jaas.flag\t" + e.getControlFlag());
            for (Map.Entry<String, ?> o : new java.util.TreeMap<>(e.getOptions()).entrySet()) {
                System.out.println("jaas." + o.getKey() + "\t" + esc(String.valueOf(o.getValue())));
            }
        } finally {
            Files.delete(f);
        }
    }
}
