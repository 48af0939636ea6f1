from api.routers import ApiRouter
from dashboard.api.views import RegistrationViewSet

router = ApiRouter()
router.register("registration", RegistrationViewSet, basename="registration")

urlpatterns = router.urls
