#pragma once
// The parameter form of one KV-cache policy, generated from the torch-free
// policy catalog: a spin box per number, a combo per choice, the registry's
// one-sentence description as each tooltip. The shared budget parameters (rho,
// budget) are left to the budget slider of the parameter panel.
#include <QWidget>

#include <map>
#include <string>

class QFormLayout;

namespace kvs {
struct PolicyDescription;
}

namespace kvs::ui {

class PolicyForm : public QWidget {
  Q_OBJECT

 public:
  explicit PolicyForm(QWidget* parent = nullptr);

  void setPolicy(const QString& name);  // rebuilds the form with defaults
  QString policy() const { return name_; }
  // Values that differ from the defaults, as spec text ("4", "cond").
  std::map<std::string, std::string> changedValues() const;
  // Sets the fields named in `values` (others: defaults); unknown names ignored.
  void setValues(const std::map<std::string, std::string>& values);
  int fieldCount() const { return static_cast<int>(fields_.size()); }

 Q_SIGNALS:
  void changed();

 private:
  struct Field {
    std::string name;
    std::string default_value;
    QWidget* editor = nullptr;
    int kind = 0;
  };
  std::string valueOf(const Field& f) const;
  void setValue(Field& f, const std::string& value);

  QString name_;
  QFormLayout* form_;
  std::vector<Field> fields_;
};

}  // namespace kvs::ui
